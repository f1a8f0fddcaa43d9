"""A run's page and what can be done to a run: retry, cancel, undo one of its calls."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..models import Run, ToolCall


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("requested_by"), pk=pk)
    context = {
        "run": run,
        "messages_": run.messages.order_by("seq"),
        "calls": run.tool_calls.prefetch_related("decisions__reviewer").order_by("created_at", "id"),
        "stall": services.run_stall(run=run),
    }
    if request.htmx and request.GET.get("fragment") == "body":
        return render(request, "approvals/partials/run_body.html", context)
    return render(request, "approvals/run.html", context)


@login_required
@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    services.run_retry(run=run, user=request.user)
    messages.info(request, "The run was put back in the queue.")
    return redirect("approvals:run", pk=run.pk)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    services.run_cancel(run=run, user=request.user)
    messages.info(request, "The run was cancelled.")
    return redirect("approvals:run", pk=run.pk)


@login_required
@require_POST
def call_undo(request: HttpRequest, pk: int, call_pk: int) -> HttpResponse:
    call = get_object_or_404(ToolCall.objects.select_related("run"), pk=call_pk, run_id=pk)
    try:
        messages.info(request, f"Undone: {services.toolcall_undo(call=call, user=request.user)}")
    except services.UndoError as exc:
        messages.error(request, str(exc))
    return redirect("approvals:run", pk=pk)
