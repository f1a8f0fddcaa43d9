from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import insight, services
from .audit import AUDIT_PERMISSION
from .access import can_decide, is_reviewer, visible_calls
from .forms import edit_fields, parse_edit
from .models import Decision, Run, ToolCall
from .tools import registry


def _pending(user):
    return (
        visible_calls(user, ToolCall.objects.filter(status=ToolCall.Status.PENDING))
        .select_related("run", "run__requested_by")
        .order_by("created_at", "id")
    )


def _get_call_for_user(request: HttpRequest, pk: int) -> ToolCall:
    return get_object_or_404(visible_calls(request.user).select_related("run", "run__requested_by"), pk=pk)


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    calls = list(_pending(request.user))
    for call in calls:
        call.viewer_can_decide, call.viewer_why = can_decide(request.user, call)
    context = {"calls": calls, "is_reviewer": is_reviewer(request.user)}
    if request.htmx and request.GET.get("fragment") == "list":
        return render(request, "approvals/partials/queue_list.html", context)
    return render(request, "approvals/queue.html", context)


def _panel_context(request, call: ToolCall, *, edit_values=None, errors=None, error_message="", editing=False):
    allowed, why = can_decide(request.user, call)
    tool = registry.get(call.tool_name)
    fields = edit_fields(tool, edit_values if edit_values is not None else (call.arguments or {}), errors) if tool and call.is_pending else []
    names = {f.name for f in fields} | {"arguments_json", "reason"}
    return {
        "call": call,
        "decision": call.final_decision(),
        "can_decide": allowed and call.is_pending,
        "why_not": why,
        "editing": editing,
        "fields": fields,
        "errors": errors or {},
        "other_errors": [(name, messages) for name, messages in (errors or {}).items() if name not in names],
        "error_message": error_message,
        "arguments_json": (edit_values or {}).get("arguments_json", "") if isinstance(edit_values, dict) else "",
    }


@login_required
@require_http_methods(["GET", "POST"])
def call_detail(request: HttpRequest, pk: int) -> HttpResponse:
    call = _get_call_for_user(request, pk)
    if request.method == "GET":
        context = _panel_context(request, call, editing=request.GET.get("edit") == "1")
        if request.htmx:
            return render(request, "approvals/partials/call_panel.html", context)
        return render(request, "approvals/call.html", context)

    action = request.POST.get("action", "")
    verdicts = {"approve": Decision.Verdict.APPROVE, "edit": Decision.Verdict.EDIT, "reject": Decision.Verdict.REJECT}
    status, error_message, errors, edit_values = 200, "", None, None
    try:
        if action not in verdicts:
            raise services.DecisionError("Choose approve, edit or reject.")
        arguments = None
        if action == "edit":
            tool = registry.get(call.tool_name)
            edit_values = {k[4:]: v for k, v in request.POST.items() if k.startswith("arg_")}
            edit_values["arguments_json"] = request.POST.get("arguments_json", "")
            if tool is None:
                raise services.NotAllowed("This tool is no longer registered; it can only be rejected.")
            arguments = parse_edit(tool, request.POST)
        services.toolcall_decide(
            call_id=call.pk,
            reviewer=request.user,
            verdict=verdicts[action],
            shown_hash=request.POST.get("arguments_hash", ""),
            arguments=arguments,
            reason=request.POST.get("reason", ""),
        )
    except services.EditInvalid as exc:
        status, errors, error_message = 400, exc.errors, str(exc)
        if "reason" in exc.errors:
            error_message = exc.errors["reason"][0]
    except services.DecisionError as exc:
        status, error_message = exc.status, str(exc)
    call.refresh_from_db()
    if status == 200 and not request.htmx:
        messages.success(request, f"{call.get_status_display()}: {call.description}")
        return redirect("approvals:queue")
    context = _panel_context(
        request, call, edit_values=edit_values, errors=errors, error_message=error_message, editing=action == "edit" and status == 400
    )
    template = "approvals/partials/call_panel.html" if request.htmx else "approvals/call.html"
    response = render(request, template, context, status=status)
    if request.htmx and status == 200:
        response["HX-Trigger"] = "queueChanged"
    return response


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("requested_by"), pk=pk)
    context = {
        "run": run,
        "messages_": run.messages.order_by("seq"),
        "calls": run.tool_calls.prefetch_related("decisions__reviewer").order_by("created_at", "id"),
    }
    if request.htmx and request.GET.get("fragment") == "body":
        return render(request, "approvals/partials/run_body.html", context)
    return render(request, "approvals/run.html", context)


@login_required
@require_POST
def run_action(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    action = request.POST.get("action")
    if action == "retry":
        services.run_retry(run=run, user=request.user)
        messages.info(request, "The run was put back in the queue.")
    elif action == "undo":
        call = get_object_or_404(ToolCall, pk=request.POST.get("call"), run=run)
        try:
            messages.info(request, f"Undone: {services.toolcall_undo(call=call, user=request.user)}")
        except services.UndoError as exc:
            messages.error(request, str(exc))
    elif action == "cancel":
        services.run_cancel(run=run, user=request.user)
        messages.info(request, "The run was cancelled.")
    return redirect("approvals:run", pk=run.pk)


@login_required
@permission_required(AUDIT_PERMISSION, raise_exception=True)
@require_GET
def insight_page(request: HttpRequest) -> HttpResponse:
    form = insight.WindowForm(request.GET or None)
    context = {"form": form, "report": insight.report(form.window())}
    if request.htmx:
        return render(request, "approvals/partials/insight_body.html", context)
    return render(request, "approvals/insight.html", context)
