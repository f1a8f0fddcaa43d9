"""A run's page and what can be done to a run: retry, cancel, undo one of its calls."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import access, services
from ..models import AuditEvent, Message, Run, Tier, ToolCall
from .requests import ReviewerRequest


def get_run_for_user(request: ReviewerRequest, pk: int) -> Run:
    """The run, if this user may see it (access.visible_runs); else 404."""
    return get_object_or_404(access.visible_runs(request.user).select_related("requested_by"), pk=pk)


def _undoable(user, run: Run, call: ToolCall) -> bool:
    if run.dry_run or call.tier != Tier.REVERSIBLE or call.status != ToolCall.Status.EXECUTED:
        return False
    return access.can_undo(user, call)[0]


@login_required
@require_GET
def run_detail(request: ReviewerRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    unreported = AuditEvent.objects.filter(tool_call=OuterRef("pk"), kind=AuditEvent.Kind.UNREPORTED)
    calls = list(
        run.tool_calls.select_related("review_group")
        .prefetch_related(ToolCall.decisions_prefetch())
        .annotate(flagged_unreported=Exists(unreported))
        .order_by("created_at", "id")
    )
    for call in calls:
        call.run = run
        call.viewer_can_undo = _undoable(request.user, run, call)
    transcript = list(run.messages.select_related("written_by").order_by("seq"))
    context = {
        "run": run,
        "messages_": transcript,
        "turns_answered": sum(1 for m in transcript if m.role == Message.Role.ASSISTANT),
        "calls": calls,
        "stall": services.run_stall(run=run),
    }
    can_act = access.can_act_on_run(request.user, run)[0]
    context["can_retry"] = can_act and run.status == Run.Status.FAILED
    context["can_cancel"] = can_act and run.is_active
    context["model_thinking"] = run.thinking and not context["stall"]  # a stalled turn says so instead
    if request.htmx and request.GET.get("fragment") == "body":
        return render(request, "approvals/run.html#body", context)
    return render(request, "approvals/run.html", context)


def _act(request: ReviewerRequest, pk: int, action, done: str) -> HttpResponse:
    """Retry or cancel, as this user: 404 if they may not see the run, 403 if they may not act on it."""
    run = get_run_for_user(request, pk)
    try:
        action(run=run, user=request.user)
    except services.NotAllowed as exc:
        raise PermissionDenied(str(exc))
    messages.info(request, done)
    return redirect("approvals:run", pk=run.pk)


@login_required
@require_POST
def run_retry(request: ReviewerRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.run_retry, "The run was put back in the queue.")


@login_required
@require_POST
def run_cancel(request: ReviewerRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.run_cancel, "The run was cancelled.")


@login_required
@require_POST
def call_undo(request: ReviewerRequest, pk: int, call_pk: int) -> HttpResponse:
    run = get_run_for_user(request, pk)
    call = get_object_or_404(run.tool_calls, pk=call_pk)
    try:
        messages.info(request, f"Undone: {services.toolcall_undo(call=call, user=request.user)}")
    except services.NotAllowed as exc:
        raise PermissionDenied(str(exc))
    except services.UndoError as exc:
        messages.error(request, str(exc))
    return redirect("approvals:run", pk=pk)
