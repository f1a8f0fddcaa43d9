"""Answering a tool's question: the form generated from its schema, posted here (declining is call_reject)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_POST

from approvals.kinds.question import AnswerInvalid, parse_answer
from approvals.web.call_panel import question_context

from .. import services
from .calls import _decided
from .panels import get_call_for_user, panel_response
from .requests import ReviewerRequest


@login_required
@require_POST
def call_answer(request: ReviewerRequest, pk: int) -> HttpResponse:
    call = get_call_for_user(request, pk)
    values = {key.removeprefix("answer_"): value for key, value in request.POST.items() if key.startswith("answer_")}
    try:
        try:
            answer = parse_answer(call.question, request.POST)
        except AnswerInvalid as exc:
            if call.is_pending:  # else the service says who decided it, which matters more
                raise services.AnswerRefused(exc.errors)
            answer = None
        shown = request.POST.get("arguments_hash", "")
        services.toolcall_answer(call_id=call.pk, reviewer=request.user, shown_hash=shown, answer=answer)
    except services.DecisionError as exc:
        call.refresh_from_db()
        errors = getattr(exc, "errors", {})
        return panel_response(request, call, status=exc.status, error=exc, **question_context(call, values, errors))
    return _decided(request, call)
