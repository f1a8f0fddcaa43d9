"""A call's page and the reviewer's actions on it, one view each."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from approvals.policy.friction import Proof
from approvals.web.forms import parse_edit

from .. import services
from ..access import can_decide, can_settle
from ..models import Decision, ToolCall
from ..planted import planted
from .panels import edit_values, get_call_for_user, panel_response
from .requests import ReviewerRequest


@login_required
@require_GET
def call_detail(request: ReviewerRequest, pk: int) -> HttpResponse:
    call = get_call_for_user(request, pk)
    return panel_response(request, call, editing=request.GET.get("edit") == "1")


@login_required
@require_GET
def call_preview(request: ReviewerRequest, pk: int) -> HttpResponse:
    call = get_call_for_user(request, pk)
    preview = services.toolcall_preview(call=call)
    if request.htmx:
        return render(request, "approvals/partials/preview.html", {"call": call, "preview": preview})
    return panel_response(request, call, preview=preview)


def _decided(request: ReviewerRequest, call: ToolCall) -> HttpResponse:
    """After a decision: the panel with its outcome (htmx), or back to the queue."""
    call.refresh_from_db()
    if not request.htmx:
        messages.success(request, f"{call.get_status_display()}: {call.current_description}")
        if feedback := planted.feedback(call.pk):  # a practice call: the reviewer is told at once
            messages.warning(request, feedback)
        return redirect("approvals:queue")
    return trigger_client_event(panel_response(request, call), "queueChanged")


def _via(request: ReviewerRequest) -> str:
    """How the reviewer chose, for the trail: the keyboard (keys.js says so) or a button."""
    return "key" if request.POST.get("via") == "key" else "button"


def _proof(request: ReviewerRequest) -> Proof:
    """What the card sends with a decision: when it was shown, the value typed, whether its facts were in view."""
    facts_in_view = {"1": True, "0": False}.get(request.POST.get("facts_seen", ""))
    return Proof(
        token=request.POST.get("shown", ""), typed=request.POST.get("confirm", ""), facts_in_view=facts_in_view
    )


def _decide(request: ReviewerRequest, pk: int, decide, **kwargs) -> HttpResponse:
    """Run one decision service for this reviewer on the arguments they were shown."""
    call = get_call_for_user(request, pk)
    shown_hash = request.POST.get("arguments_hash", "")
    try:
        decide(call_id=call.pk, reviewer=request.user, shown_hash=shown_hash, channel=_via(request), **kwargs)
    except services.DecisionError as exc:
        call.refresh_from_db()
        return panel_response(request, call, status=exc.status, error=exc)
    return _decided(request, call)


@login_required
@require_POST
def call_approve(request: ReviewerRequest, pk: int) -> HttpResponse:
    anyway = request.POST.get("approve_anyway") == "1"
    approve = Decision.Verdict.APPROVE
    return _decide(request, pk, services.toolcall_decide, verdict=approve, approve_anyway=anyway, proof=_proof(request))


@login_required
@require_POST
def call_reject(request: ReviewerRequest, pk: int) -> HttpResponse:
    reason = request.POST.get("reason", "")
    reject = Decision.Verdict.REJECT
    return _decide(request, pk, services.toolcall_decide, verdict=reject, reason=reason, proof=_proof(request))


@login_required
@require_POST
def call_respond(request: ReviewerRequest, pk: int) -> HttpResponse:
    reason, guidance = request.POST.get("reason", ""), request.POST.get("guidance", "")
    return _decide(request, pk, services.toolcall_respond, reason=reason, guidance=guidance)


@login_required
@require_POST
def call_edit(request: ReviewerRequest, pk: int) -> HttpResponse:
    call = get_call_for_user(request, pk)
    try:
        arguments = parse_edit(services.tool_for(call), request.POST)
        services.toolcall_decide(
            call_id=call.pk,
            reviewer=request.user,
            verdict=Decision.Verdict.EDIT,
            shown_hash=request.POST.get("arguments_hash", ""),
            arguments=arguments,
            approve_anyway=request.POST.get("approve_anyway") == "on",
            channel=_via(request),
            proof=_proof(request),
        )
    except services.DecisionError as exc:
        call.refresh_from_db()
        editing = isinstance(exc, services.EditInvalid)
        return panel_response(request, call, status=exc.status, error=exc, editing=editing, values=edit_values(request))
    return _decided(request, call)


@login_required
@require_POST
def call_changes(request: ReviewerRequest, pk: int) -> HttpResponse:
    """Validate an edit and show how it differs from the model's arguments, deciding nothing."""
    call = get_call_for_user(request, pk)
    allowed, why = can_decide(request.user, call)
    if not allowed:
        return panel_response(request, call, status=403, error=services.NotAllowed(why))
    try:
        diff = services.toolcall_edit_changes(call=call, arguments=parse_edit(services.tool_for(call), request.POST))
    except services.DecisionError as exc:
        return panel_response(request, call, status=400, error=exc, editing=True, values=edit_values(request))
    return panel_response(request, call, editing=True, values=edit_values(request), edit_diff=diff)


def _claim_response(request: ReviewerRequest, call: ToolCall, error: services.DecisionError | None) -> HttpResponse:
    if not request.htmx:
        if isinstance(error, services.NotAllowed):
            raise PermissionDenied(str(error))
        if error is not None:
            messages.error(request, str(error))
        return redirect("approvals:call", pk=call.pk)
    call.refresh_from_db()
    allowed, _ = can_decide(request.user, call)
    context = {"call": call, "can_decide": allowed and call.is_pending}
    return render(request, "approvals/partials/claim.html", context, status=error.status if error else 200)


def _claim_action(request: ReviewerRequest, pk: int, service) -> HttpResponse:
    """Start or release "being reviewed by me" on a call this reviewer may see."""
    call = get_call_for_user(request, pk)
    try:
        service(call_id=call.pk, reviewer=request.user)
    except services.DecisionError as exc:
        return _claim_response(request, call, exc)
    return _claim_response(request, call, None)


@login_required
@require_POST
def call_claim(request: ReviewerRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, services.toolcall_review_start)


@login_required
@require_POST
def call_release(request: ReviewerRequest, pk: int) -> HttpResponse:
    return _claim_action(request, pk, services.toolcall_review_release)


@login_required
@require_POST
def call_settle(request: ReviewerRequest, pk: int) -> HttpResponse:
    """Say what happened to a call whose outcome is unknown: it ran (the output), it did not (run it now), fail."""
    call = get_call_for_user(request, pk)
    allowed, why = can_settle(request.user, call)
    if not allowed:
        return panel_response(request, call, status=403, error=services.NotAllowed(why))
    answer, output, reason = (request.POST.get(name, "") for name in ("answer", "output", "reason"))
    try:
        services.toolcall_settle(call_id=call.pk, reviewer=request.user, answer=answer, output=output, reason=reason)
    except services.DecisionError as exc:
        call.refresh_from_db()
        return panel_response(request, call, status=exc.status, error=exc, values={"output": output, "reason": reason})
    return _decided(request, call)
