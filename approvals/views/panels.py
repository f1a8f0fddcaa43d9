"""Rendering the call panel for a view: the page, or the partial for htmx."""

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render

from approvals.kinds.turn import turn_card
from approvals.web.call_panel import PANEL_TEMPLATE, panel_context
from approvals.web.forms import edit_fields

from ..access import readable_calls
from ..models import ToolCall
from ..services import DecisionError, EditInvalid
from ..tools import registry
from .requests import ReviewerRequest

NAMED_ERRORS = ("reason", "guidance", "output", "answer", "approve", "confirm")  # said above the buttons
FIELDLESS = {"arguments_json", "reason", "guidance", "approve_anyway", "approve", "confirm"}


def get_call_for_user(request: ReviewerRequest, pk: int) -> ToolCall:
    """The call, if this user may read it (access.readable_calls); else 404. Acting on it is the services' check."""
    calls = readable_calls(request.user).select_related("run", "run__requested_by", "review_group", "reviewing_by")
    return get_object_or_404(calls, pk=pk)


def edit_values(request: ReviewerRequest) -> dict:
    """What the reviewer typed into the edit form, to show it again."""
    values = {k[4:]: v for k, v in request.POST.items() if k.startswith("arg_")}
    values["arguments_json"] = request.POST.get("arguments_json", "")
    return values


def _error_context(error: DecisionError | None) -> dict:
    if error is None:
        return {"errors": {}, "error_message": ""}
    errors = error.errors if isinstance(error, EditInvalid) else {}
    named = [
        errors[name][0] for name in ("reason", "guidance", "output", "answer", "approve", "confirm") if name in errors
    ]
    return {"errors": errors, "error_message": named[0] if named else str(error)}


def panel_response(
    request: ReviewerRequest,
    call: ToolCall,
    *,
    status: int = 200,
    error: DecisionError | None = None,
    editing: bool = False,
    values: dict | None = None,
    **extra,
) -> HttpResponse:
    """The call panel as this reviewer sees it: the whole page, or only the panel for htmx."""
    tool = registry.for_call(call)
    context = panel_context(request.user, call, call.final_decision()) | _error_context(error)
    shown = values if values is not None else (call.review_arguments or {})
    fields = edit_fields(tool, shown, context["errors"]) if tool and call.is_pending else []
    names = {f.name for f in fields} | FIELDLESS
    context |= {
        "editing": editing,
        "fields": fields,
        "other_errors": [(name, msgs) for name, msgs in context["errors"].items() if name not in names],
        "arguments_json": (values or {}).get("arguments_json", ""),
        "settle_values": values or {},
        # Opened in the queue's pane: say "being reviewed by you", as opening the call's page does.
        "claim_on_open": context["can_decide"] and request.headers.get("HX-Target") == "detail",
        **extra,
    }
    if call.kind == ToolCall.Kind.TURN:
        context["turn"] = turn_card(call)
    template = PANEL_TEMPLATE if request.htmx else "approvals/call.html"
    return render(request, template, context, status=status)
