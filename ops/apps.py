from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"
    verbose_name = "Operations: health, metrics, logs, notifications"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from approvals.policy import snapshot as policy_snapshot

        from .models import NotificationPreference

        # Whether anyone asked for an email per call is read once per change of the policy stamp
        # (ops/notify.py: anyone_to_tell), so a change of preferences writes a new stamp too.
        for name, signal in (("saved", post_save), ("deleted", post_delete)):
            signal.connect(
                policy_snapshot.changed, sender=NotificationPreference, dispatch_uid=f"policy-preference-{name}"
            )
