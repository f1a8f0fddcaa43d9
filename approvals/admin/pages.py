"""The admin: the record, read-only for everyone and the only view auditors need.

Members of the "auditors" group see runs, calls, decisions, rules and the audit
trail and can change nothing (not even policy rules and tool settings, which
administrators edit in rules_admin.py; see auditors.py).
Each call's page shows its chain from proposal to result, every event checked
against its hash. The lists stay fast on a million events: no COUNT(*) over
the table (CappedPaginator), related rows in the same query, filters that need
no query of their own, and sorting only where an index serves it.
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.db.models import OuterRef, Subquery
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from approvals import audit
from approvals.admin import search
from approvals.admin.base import RecordAdmin, _pretty, _text, revealed
from approvals.admin.filters import (
    ActorFilter,
    CallReviewerFilter,
    CallToolFilter,
    DateRangeFilter,
    OutcomeFilter,
    ReviewerFilter,
    ToolFilter,
    refused_query,
)
from approvals.audit import export
from approvals.models import AuditEvent, Decision, Message, Run, ToolCall
from approvals.templatetags.review import reveal
from approvals.tools import registry


class ToolCallInline(admin.TabularInline):
    model = ToolCall
    fields = readonly_fields = ("tool", "status", "description_shown", "created_at", "executed_at")
    tool = revealed("tool_name", "tool")
    description_shown = revealed("description", "description")
    show_change_link = True
    extra = 0
    can_delete = False
    ordering = ["pk"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(RecordAdmin):
    list_display = ["id", "agent", "status", "requested_by", "step_count", "created"]
    list_filter = ["status", ("created_at", DateRangeFilter)]
    list_select_related = ["requested_by"]
    search_fields = ["id"]
    search_help_text = property(lambda self: search.help_text("A run id or UUID"))
    sortable_by = ["id", "created"]
    inlines = [ToolCallInline]
    ordering = ["-pk"]
    fields = readonly_fields = (
        "public_id",
        "agent",
        "request_shown",
        "requested_by",
        "status",
        "step_count",
        "max_steps",
        "thinking",
        "last_error_shown",
        "dry_run",
        "created_at",
        "updated_at",
        "finished_at",
    )
    request_shown = revealed("request", "request", _text)
    last_error_shown = revealed("last_error", "last error", _text)

    def get_search_results(self, request, queryset, search_term):
        return queryset.filter(search.runs(search_term)), False


# The call page's two sections.
CALL_PROPOSAL = (
    "run",
    "call_id_shown",
    "tool",
    "tier",
    "description_shown",
    "arguments_shown",
    "facts_shown",
    "policy_shown",
    "reasoning_shown",
    "user_request_shown",
)
CALL_OUTCOME = (
    "status",
    "required_approvals",
    "expires_at",
    "approved_arguments_shown",
    "idempotency_key",
    "claimed_at",
    "executed_at",
    "output_shown",
)


@admin.register(ToolCall)
class ToolCallAdmin(RecordAdmin):
    list_display = ["id", "tool", "status", "decision", "key_values", "run_link", "created"]
    list_filter = [ToolFilter, "tier", OutcomeFilter, "status", CallReviewerFilter, ("created_at", DateRangeFilter)]
    list_select_related = ["run"]
    search_fields = ["id"]
    search_help_text = property(lambda self: search.help_text("A call or run id, a run's UUID"))
    sortable_by = ["id", "created"]
    ordering = ["-created_at", "-pk"]  # the created_at index serves a date filter and the order at once
    fieldsets = [("Proposal", {"fields": CALL_PROPOSAL}), ("Outcome", {"fields": CALL_OUTCOME})]
    readonly_fields = CALL_PROPOSAL + CALL_OUTCOME
    tool = revealed("tool_name", "tool")
    call_id_shown = revealed("call_id", "call id")
    description_shown = revealed("description", "description")

    def get_queryset(self, request):
        final = Decision.objects.filter(tool_call=OuterRef("pk"), final=True)
        return (
            super()
            .get_queryset(request)
            .annotate(
                final_verdict=Subquery(final.values("verdict")[:1]),
                final_reviewer=Subquery(final.values("reviewer__username")[:1]),
            )
        )

    def get_search_results(self, request, queryset, search_term):
        return queryset.filter(search.calls(search_term)), False

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["chain"] = audit.call_chain(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="key fields")
    def key_values(self, call):
        """What the call's tool declares tells its calls apart: key arguments, then key facts."""
        tool = registry.for_call(call)
        if tool is None:
            return ""
        pairs = tool.key_values(call.arguments) + tool.key_facts_values(call.facts)
        return format_html_join(" · ", "{}: {}", ((name, reveal(value)) for name, value in pairs))

    @admin.display(description="decision")
    def decision(self, call):
        if not call.final_verdict:
            return "run by policy" if (call.policy or {}).get("action") == "run" else ""
        return f"{dict(Decision.Verdict.choices)[call.final_verdict]} by {call.final_reviewer or 'the system'}"

    @admin.display(description="arguments proposed")
    def arguments_shown(self, call):
        return _pretty(call.arguments) if call.arguments is not None else _text(call.raw_arguments)

    @admin.display(description="facts fetched")
    def facts_shown(self, call):
        return _pretty(call.facts)

    @admin.display(description="policy")
    def policy_shown(self, call):
        return _pretty(call.policy)

    @admin.display(description="approved arguments")
    def approved_arguments_shown(self, call):
        return _pretty(call.approved_arguments) if call.approved_arguments is not None else "—"

    @admin.display(description="agent's reasoning (from the model)")
    def reasoning_shown(self, call):
        return _text(call.reasoning)

    @admin.display(description="user request")
    def user_request_shown(self, call):
        return _text(call.user_request)

    @admin.display(description="output")
    def output_shown(self, call):
        return _text(call.output)


@admin.register(Decision)
class DecisionAdmin(RecordAdmin):
    list_display = ["id", "tool_call", "verdict", "reviewer", "final", "created"]
    list_filter = [CallToolFilter, "verdict", ReviewerFilter, "final", ("created_at", DateRangeFilter)]
    list_select_related = ["tool_call", "reviewer"]
    search_fields = ["id"]
    search_help_text = property(lambda self: search.help_text("A call or run id"))
    sortable_by = ["id", "created"]
    ordering = ["-created_at", "-pk"]
    fields = readonly_fields = (
        "tool_call",
        "reviewer",
        "verdict",
        "arguments_shown",
        "arguments_hash",
        "reason_shown",
        "guidance_shown",
        "final",
        "review_round",
        "created_at",
    )
    arguments_shown = revealed("arguments", "arguments", _pretty)
    reason_shown = revealed("reason", "reason", _text)
    guidance_shown = revealed("guidance", "guidance", _text)

    @admin.display(description="review round (a re-review after a return to the queue)")
    def review_round(self, decision):
        return decision.round

    def get_search_results(self, request, queryset, search_term):
        return queryset.filter(search.by_call(search_term, run_field="tool_call__run")), False


@admin.register(Message)
class MessageAdmin(RecordAdmin):
    list_display = ["id", "run", "seq", "role", "created"]
    list_filter = ["role", ("created_at", DateRangeFilter)]
    list_select_related = ["run"]
    search_fields = ["=run__id"]
    sortable_by = ["id"]
    ordering = ["-pk"]
    fields = readonly_fields = (
        "run",
        "seq",
        "role",
        "content_shown",
        "tool_calls_shown",
        "tool_call_id_shown",
        "created_at",
    )
    content_shown = revealed("content", "content", _text)
    tool_calls_shown = revealed("tool_calls", "tool calls", _pretty)
    tool_call_id_shown = revealed("tool_call_id", "tool call id")


@admin.register(AuditEvent)
class AuditEventAdmin(RecordAdmin):
    list_display = ["id", "created", "kind", "actor_label", "run_link", "tool_call", "short_hash"]
    list_filter = ["kind", CallToolFilter, ActorFilter, ("created_at", DateRangeFilter)]
    list_select_related = ["run", "tool_call"]
    search_fields = ["id"]
    search_help_text = property(lambda self: search.help_text("A call or run id, a run's UUID"))
    sortable_by = []
    # Newest first by time, then id: with a date filter, ordering by id alone makes
    # PostgreSQL walk the primary key backwards through every newer event.
    ordering = ["-created_at", "-pk"]
    fields = readonly_fields = (
        "id",
        "created_at",
        "kind",
        "actor",
        "actor_label",
        "run",
        "tool_call",
        "payload_shown",
        "prev_hash",
        "previous_event",
        "hash",
        "hash_check",
    )

    def get_search_results(self, request, queryset, search_term):
        return queryset.filter(search.events(search_term)), False

    def get_urls(self):
        export_view = self.admin_site.admin_view(self.export_view)
        return [path("export.<str:fmt>", export_view, name="approvals_auditevent_export"), *super().get_urls()]

    def export_view(self, request, fmt: str):
        """The trail as JSONL or CSV, limited by the list's date range and tool filters, streamed."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if fmt not in export.FORMATS:
            return HttpResponseBadRequest("Choose jsonl or csv.")
        if refused := refused_query(request):
            return refused  # before streaming starts: a query failing mid-stream would cut the file short
        try:
            selection = export.ExportFilter.parse(
                since=request.GET.get("created_at__gte"),
                before=request.GET.get("created_at__lt"),
                tool=request.GET.get("tool"),
            )
        except ValueError as exc:
            return HttpResponseBadRequest(str(exc))
        lines = export.lines(selection, fmt)
        # Under ASGI, Django would read a plain iterator to the end before sending a byte.
        content = export.in_thread(lines) if isinstance(request, ASGIRequest) else lines
        response = StreamingHttpResponse(content, content_type=export.FORMATS[fmt])
        response["Content-Disposition"] = f'attachment; filename="{selection.filename(fmt)}"'
        return response

    def changelist_view(self, request, extra_context=None):
        scope = {key: request.GET[key] for key in ("created_at__gte", "created_at__lt", "tool") if request.GET.get(key)}
        extra_context = {
            **(extra_context or {}),
            "export_query": "?" + urlencode(scope) if scope else "",
            "export_scope": scope,
        }
        return super().changelist_view(request, extra_context)

    @admin.display(description="hash")
    def short_hash(self, event):
        return event.hash[:12] + "…"

    @admin.display(description="payload")
    def payload_shown(self, event):
        return _pretty(event.payload)

    @admin.display(description="follows")
    def previous_event(self, event):
        previous, previous_hash = audit.before(event)
        if previous is None:
            return (
                "the start of its chain"
                if event.prev_hash == audit.GENESIS_HASH
                else "NO EVENT BEFORE IT IN ITS CHAIN, YET IT CARRIES A HASH"
            )
        link = format_html(
            '<a href="{}">event {}</a>', reverse("admin:approvals_auditevent_change", args=[previous]), previous
        )
        if previous_hash != event.prev_hash:
            return format_html("<strong class='rh-bad'>✗ {} comes before it, with another hash</strong>", link)
        return link

    @admin.display(description="hash check")
    def hash_check(self, event):
        if event.hash_matches:
            return "✓ the content matches the hash"
        return format_html(
            "<strong class='rh-bad'>✗ the content does not match the hash: this event was changed</strong>"
        )
