"""A reviewer's decision on a held model turn: Continue, Add a note, or Write the reply (one form, named buttons)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_POST

from .. import services
from ..models import Decision
from .calls import _decided
from .panels import get_call_for_user, panel_response
from .requests import ReviewerRequest

VERDICTS = {"continue": Decision.Verdict.APPROVE, "note": Decision.Verdict.NOTE, "reply": Decision.Verdict.REPLY}


@login_required
@require_POST
def turn_decide(request: ReviewerRequest, pk: int) -> HttpResponse:
    call = get_call_for_user(request, pk)
    choice = request.POST.get("decision", "")
    typed = {"note": request.POST.get("note", ""), "reply": request.POST.get("reply", "")}
    try:
        services.turn_decide(
            call_id=call.pk,
            reviewer=request.user,
            verdict=VERDICTS.get(choice, choice),
            shown_hash=request.POST.get("arguments_hash", ""),
            text=typed.get(choice, ""),
        )
    except services.DecisionError as exc:
        call.refresh_from_db()
        return panel_response(request, call, status=exc.status, error=exc, typed=typed)
    return _decided(request, call)
