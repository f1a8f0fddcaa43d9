from django.apps import AppConfig
from django.db.backends.signals import connection_created


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = "Approvals"

    def ready(self):
        from django.contrib.auth.models import Group
        from django.db.models.signals import post_delete, post_save

        from . import percentile, policy_snapshot
        from .models import PolicyRule, ToolSetting, TurnRule

        # SQLite has no percentile_cont; the insight page brings its own.
        connection_created.connect(percentile.add_sqlite_functions, dispatch_uid="reviewhub-sqlite-functions")
        # A change of policy replaces every process's snapshot of it (approvals/policy_snapshot.py).
        for model in (PolicyRule, TurnRule, ToolSetting, Group):
            for name, signal in (("saved", post_save), ("deleted", post_delete)):
                signal.connect(policy_snapshot.changed, sender=model, dispatch_uid=f"policy-{model.__name__}-{name}")
