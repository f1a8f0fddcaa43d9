"""Auditors: members of the "auditors" group read everything in the admin and change nothing."""

from django.http import HttpRequest

AUDITORS = "auditors"


def is_auditor(request: HttpRequest) -> bool:
    """Whether the user is in the auditors group (asked once per request)."""
    if not hasattr(request, "_reviewhub_auditor"):
        user = request.user
        request._reviewhub_auditor = user.is_authenticated and user.groups.filter(name=AUDITORS).exists()
    return request._reviewhub_auditor


class AuditorsOnlyLook:
    """A ModelAdmin mixin: whatever else they may hold (even superuser), auditors cannot add, change or delete."""

    def has_add_permission(self, request, *args):
        return not is_auditor(request) and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return not is_auditor(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not is_auditor(request) and super().has_delete_permission(request, obj)
