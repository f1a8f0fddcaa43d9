"""Admin pages of what the application writes (the record, agents' exchanges, shadow results): shown, never
added, changed or deleted there, by anyone. Auditors' read-only look (auditors.py) is a different rule: it
takes the writes away from some people on pages others may change."""


class ReadOnly:
    """A ModelAdmin mixin, listed before ModelAdmin: nobody adds, changes or deletes here."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
