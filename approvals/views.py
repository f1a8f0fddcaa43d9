from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import insight, services
from .access import can_decide, is_reviewer, visible_calls
from .audit import AUDIT_PERMISSION
from .forms import edit_fields, parse_edit
from .models import Decision, Run, ToolCall, arguments_diff
from .panels import panel_context
from .tools import ArgumentsInvalid, registry


def _pending(user):
    return (
        visible_calls(user, ToolCall.objects.filter(status=ToolCall.Status.PENDING))
        .select_related("run", "run__requested_by", "review_group", "reviewing_by")
        .order_by("created_at", "id")
    )


def _get_call_for_user(request: HttpRequest, pk: int) -> ToolCall:
    calls = visible_calls(request.user).select_related("run", "run__requested_by", "review_group", "reviewing_by")
    return get_object_or_404(calls, pk=pk)


def _selected(values: list[str]) -> list[tuple[int, str]]:
    """Checked calls as (id, the argument hash the reviewer saw), from "id:hash" values."""
    items = []
    for value in values:
        pk, _, shown_hash = value.partition(":")
        if pk.isdigit():
            items.append((int(pk), shown_hash))
    return items


@login_required
@require_http_methods(["GET", "POST"])
def queue(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        if request.POST.get("action") == "approve_selected":
            _approve_selected(request)
        return redirect("approvals:queue")
    if request.htmx and request.GET.get("fragment") == "count":
        return render(request, "approvals/partials/queue_count.html")  # the count comes from the context processor
    calls = list(_pending(request.user))
    for call in calls:
        call.viewer_can_decide, call.viewer_why = can_decide(request.user, call)
    context = {"calls": calls, "is_reviewer": is_reviewer(request.user)}
    if request.htmx and request.GET.get("fragment") == "live":
        return render(request, "approvals/partials/live_queue.html", context)
    return render(request, "approvals/queue.html", context)


def _approve_selected(request: HttpRequest) -> None:
    items = _selected(request.POST.getlist("calls"))
    if not items:
        messages.error(request, "Select the calls to approve.")
        return
    results = services.toolcall_approve_many(reviewer=request.user, items=items)
    done = [pk for pk, problem in results if not problem]
    if done:
        messages.success(
            request, f"Approved {len(done)} call{'s' if len(done) != 1 else ''}: " + ", ".join(f"#{pk}" for pk in done)
        )
    for pk, problem in results:
        if problem:
            messages.error(request, f"#{pk} was not approved: {problem}")


def _preview(call: ToolCall) -> str:
    """What the call would do, from the tool's dry run; nothing is written."""
    tool = registry.get(call.tool_name)
    if tool is None or call.review_arguments is None:
        return "No preview: the tool or its arguments are unknown."
    try:
        return tool.preview(tool.parse(call.review_arguments))
    except ArgumentsInvalid as exc:
        return f"No preview: {exc.message()}"
    except Exception as exc:
        return f"No preview: the simulation failed ({exc})."


def _panel_context(
    request,
    call: ToolCall,
    *,
    edit_values=None,
    errors=None,
    error_message="",
    editing=False,
    edit_diff=None,
    preview="",
):
    tool = registry.get(call.tool_name)
    values = edit_values if edit_values is not None else (call.review_arguments or {})
    fields = edit_fields(tool, values, errors) if tool and call.is_pending else []
    names = {f.name for f in fields} | {"arguments_json", "reason", "guidance"}
    return panel_context(request.user, call, call.final_decision()) | {
        "editing": editing,
        "fields": fields,
        "errors": errors or {},
        "other_errors": [(name, messages) for name, messages in (errors or {}).items() if name not in names],
        "error_message": error_message,
        "arguments_json": (edit_values or {}).get("arguments_json", "") if isinstance(edit_values, dict) else "",
        "edit_diff": edit_diff,
        "preview": preview,
    }


@login_required
@require_http_methods(["GET", "POST"])
def call_detail(request: HttpRequest, pk: int) -> HttpResponse:
    call = _get_call_for_user(request, pk)
    if request.method == "GET":
        if request.GET.get("preview") == "1":
            preview = _preview(call)
            if request.htmx:
                return render(request, "approvals/partials/preview.html", {"call": call, "preview": preview})
            return render(request, "approvals/call.html", _panel_context(request, call, preview=preview))
        context = _panel_context(request, call, editing=request.GET.get("edit") == "1")
        if request.htmx:
            return render(request, "approvals/partials/call_panel.html", context)
        return render(request, "approvals/call.html", context)

    action = request.POST.get("action", "")
    if action in ("claim", "release"):
        return _claim(request, call, action)
    if action == "preview_edit":
        return _edit_preview(request, call)
    verdicts = {
        "approve": Decision.Verdict.APPROVE,
        "edit": Decision.Verdict.EDIT,
        "reject": Decision.Verdict.REJECT,
        "respond": Decision.Verdict.REJECT,
    }
    status, error_message, errors, edit_values = 200, "", None, None
    try:
        if action not in verdicts:
            raise services.DecisionError("Choose approve, edit or reject.")
        guidance = request.POST.get("guidance", "").strip()
        if action == "respond" and not guidance:
            raise services.EditInvalid({"guidance": ["Write what the agent should do instead; it reads this next."]})
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
            guidance=guidance,
        )
    except services.EditInvalid as exc:
        status, errors, error_message = 400, exc.errors, str(exc)
        for name in ("reason", "guidance"):
            if name in exc.errors:
                error_message = exc.errors[name][0]
    except services.DecisionError as exc:
        status, error_message = exc.status, str(exc)
    call.refresh_from_db()
    if status == 200 and not request.htmx:
        messages.success(request, f"{call.get_status_display()}: {call.current_description}")
        return redirect("approvals:queue")
    context = _panel_context(
        request,
        call,
        edit_values=edit_values,
        errors=errors,
        error_message=error_message,
        editing=action == "edit" and status == 400,
    )
    template = "approvals/partials/call_panel.html" if request.htmx else "approvals/call.html"
    response = render(request, template, context, status=status)
    if request.htmx and status == 200:
        response["HX-Trigger"] = "queueChanged"
    return response


def _edit_preview(request: HttpRequest, call: ToolCall) -> HttpResponse:
    """Validate an edit and show how it differs from the model's arguments, deciding nothing."""
    tool = registry.get(call.tool_name)
    edit_values = {k[4:]: v for k, v in request.POST.items() if k.startswith("arg_")}
    edit_values["arguments_json"] = request.POST.get("arguments_json", "")
    status, errors, diff = 200, None, None
    try:
        if tool is None or not call.is_pending:
            raise services.EditInvalid({"__all__": ["This call can no longer be edited."]})
        try:
            edited = tool.normalize(parse_edit(tool, request.POST))
        except ArgumentsInvalid as exc:
            raise services.EditInvalid(exc.errors)
        diff = arguments_diff(call.arguments, edited)
    except services.EditInvalid as exc:
        status, errors = 400, exc.errors
    context = _panel_context(request, call, edit_values=edit_values, errors=errors, editing=True, edit_diff=diff)
    template = "approvals/partials/call_panel.html" if request.htmx else "approvals/call.html"
    return render(request, template, context, status=status)


def _claim(request: HttpRequest, call: ToolCall, action: str) -> HttpResponse:
    status = 200
    try:
        if action == "claim":
            services.toolcall_review_start(call_id=call.pk, reviewer=request.user)
        else:
            services.toolcall_review_release(call_id=call.pk, reviewer=request.user)
    except services.DecisionError as exc:
        status = exc.status
        if not request.htmx:
            messages.error(request, str(exc))
    if not request.htmx:
        return redirect("approvals:call", pk=call.pk)
    call.refresh_from_db()
    allowed, _ = can_decide(request.user, call)
    return render(
        request,
        "approvals/partials/claim.html",
        {"call": call, "can_decide": allowed and call.is_pending},
        status=status,
    )


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
