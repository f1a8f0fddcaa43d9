"""The admin site: Django's, with every ModelAdmin registered on it made to ask approvals/access.py whether the
user may change anything (auditors.AuditorsOnlyLook). INSTALLED_APPS names AdminConfig instead of
django.contrib.admin, so `admin.site` is this site for every app, Django's auth included."""

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AuditedAdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        from .auditors import AuditorsOnlyLook  # the models are loaded by the time apps register their admins

        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, AuditorsOnlyLook):
            attributes = {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__}
            admin_class = type(admin_class.__name__, (AuditorsOnlyLook, admin_class), attributes)
        super().register(model_or_iterable, admin_class, **options)


class AdminConfig(DjangoAdminConfig):
    default_site = "approvals.admin_site.AuditedAdminSite"
