"""The app configs: approvals itself, and the admin site every app registers with.

The admin site is Django's, with every ModelAdmin registered on it made to ask approvals/access/ whether the
user may change anything (approvals/admin/auditors.py). INSTALLED_APPS names AdminConfig instead of
django.contrib.admin, so `admin.site` is this site for every app, Django's auth included. It lives here, not in
approvals/admin/, because INSTALLED_APPS imports it before the models are loaded."""

from django.apps import AppConfig
from django.contrib import admin
from django.contrib.admin import apps as admin_apps
from django.db.backends.signals import connection_created


class ApprovalsConfig(AppConfig):
    default = True  # INSTALLED_APPS names "approvals"; the admin's config below is named in full
    name = "approvals"
    verbose_name = "Approvals"

    def ready(self):
        from django.contrib.auth.models import Group
        from django.db.models.signals import post_delete, post_save

        from approvals.insight import percentile
        from approvals.policy import snapshot as policy_snapshot

        from .models import PolicyRule, ToolSetting, TurnRule

        # SQLite has no percentile_cont; the insight page brings its own.
        connection_created.connect(percentile.add_sqlite_functions, dispatch_uid="reviewhub-sqlite-functions")
        # A change of policy replaces every process's snapshot of it (approvals/policy/snapshot.py).
        for model in (PolicyRule, TurnRule, ToolSetting, Group):
            for name, signal in (("saved", post_save), ("deleted", post_delete)):
                signal.connect(policy_snapshot.changed, sender=model, dispatch_uid=f"policy-{model.__name__}-{name}")


class AuditedAdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        from approvals.admin.auditors import (
            AuditorsOnlyLook,  # the models are loaded by the time apps register their admins
        )

        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, AuditorsOnlyLook):
            attributes = {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__}
            admin_class = type(admin_class.__name__, (AuditorsOnlyLook, admin_class), attributes)
        super().register(model_or_iterable, admin_class, **options)


class AdminConfig(admin_apps.AdminConfig):
    default = False
    default_site = "approvals.apps.AuditedAdminSite"
