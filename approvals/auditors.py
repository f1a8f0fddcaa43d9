"""Auditors: members of the "auditors" group read everything in the admin and change nothing.

Who is an auditor is for access.is_auditor to say, like every other access rule.
"""

from .access import is_auditor


class AuditorsOnlyLook:
    """A ModelAdmin mixin: whatever else they may hold (even superuser), auditors cannot add, change or delete."""

    def has_add_permission(self, request, *args):
        return not is_auditor(request.user) and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return not is_auditor(request.user) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not is_auditor(request.user) and super().has_delete_permission(request, obj)
