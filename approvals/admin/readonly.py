"""Admin pages of what the application writes (the record, agents' exchanges, shadow results): shown, never
added, changed or deleted there, by anyone. Auditors' read-only look (auditors.py) is a different rule: it
takes the writes away from some people on pages others may change."""

from typing import TYPE_CHECKING

from django.contrib import admin

# The base of a ModelAdmin mixin whose methods call ModelAdmin's through super(), as the type checker sees it.
if TYPE_CHECKING:
    ModelAdminMixin = admin.ModelAdmin
else:
    ModelAdminMixin = object


class ReadOnly:
    """A ModelAdmin mixin, listed before ModelAdmin: nobody adds, changes or deletes here."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
