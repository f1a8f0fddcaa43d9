"""Auditors: members of the "auditors" group read everything in the admin and change nothing.

Who may change anything in the admin is for access.may_change_in_admin to say, like every other access rule;
the admin site (approvals/apps.py) mixes AuditorsOnlyLook into every ModelAdmin registered with it, the
shop's and Django's own user and group admins included, so that none can forget to ask.
"""

from django.contrib.admin.options import ActionLocation

from approvals.access import may_change_in_admin
from approvals.admin.readonly import ModelAdminMixin


class AuditorsOnlyLook(ModelAdminMixin):
    """A ModelAdmin mixin: whatever else they may hold (even superuser), auditors cannot add, change or delete,
    nor run an action."""

    def has_add_permission(self, request, *args):
        return may_change_in_admin(request.user) and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return may_change_in_admin(request.user) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return may_change_in_admin(request.user) and super().has_delete_permission(request, obj)

    def get_actions(self, request, action_location=ActionLocation.CHANGE_LIST):
        return super().get_actions(request, action_location) if may_change_in_admin(request.user) else {}
