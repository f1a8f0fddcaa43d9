"""The shape every admin page of the record shares: read-only, lists that never count the whole
table (CappedPaginator), and text a model or a customer wrote shown escaped with its hidden
characters made visible (revealed, _text, _pretty)."""

from datetime import UTC

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html

from approvals.admin.filters import RefuseUnstorableQuery
from approvals.admin.readonly import ReadOnly
from approvals.lib.text import pretty_json
from approvals.templatetags.review import reveal


class CappedPaginator(Paginator):
    """Counts at most `cap` matching rows: COUNT(*) over a LIMIT, never over the whole table.

    Beyond the cap the list says "more than 2,000" and offers 40 pages; people narrow
    the filters rather than page further, and each count stays a few milliseconds.
    """

    cap = 2_000
    object_list: QuerySet  # the admin's changelists page querysets

    @cached_property
    def count(self) -> int:
        return self.object_list.values("pk")[: self.cap + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > self.cap


# --- the record: nobody writes it here --------------------------------------------------------


class RecordAdmin(ReadOnly, RefuseUnstorableQuery, admin.ModelAdmin):
    """Written by the application only: nobody adds, changes or deletes it here."""

    class Media:
        css = {"all": ["reviewhub/admin.css"]}

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50
    actions = None

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, obj):
        return obj.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="run", ordering="run_id")
    def run_link(self, obj):
        if obj.run_id is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:approvals_run_change", args=[obj.run_id]), obj.run_id)


def _pretty(value) -> str:
    """JSON for people: indented, escaped, invisible and bidirectional characters made visible."""
    return format_html("<pre class='rh-json'>{}</pre>", reveal(pretty_json(value)))


def _text(value) -> str:
    return format_html("<div class='rh-text'>{}</div>", reveal(value)) if value else "—"


def revealed(attribute: str, description: str, shown=reveal):
    """A read-only column or field for text a model or a customer wrote: escaped, hidden characters made
    visible (reveal for a short value, _text for a long one, _pretty for JSON). Use as a ModelAdmin attribute."""

    @admin.display(description=description)
    def column(self, obj):
        value = getattr(obj, attribute)
        return shown(value) if value not in (None, "") else "—"

    return column
