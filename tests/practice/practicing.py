"""Helpers for the practice-call tests: a real refund waiting for review, and a practice copy of it."""

from approvals.models import ToolCall
from practice.models import PracticeCall
from practice.services import practice_plant
from shop.mistakes import EMAIL_MISTAKES, REFUND_MISTAKES
from tests.reviewing import REFUND_CALL, propose

MISTAKES = {m.name: m for m in REFUND_MISTAKES + EMAIL_MISTAKES}


def real_refund(run, call_id: str = "call_1") -> ToolCall:
    """The model's refund of $45 on A-1001 (Dana's $49 order), waiting for review."""
    call = propose(run, *REFUND_CALL, call_id=call_id)
    assert call.status == ToolCall.Status.PENDING
    return call


def plant(source: ToolCall, mistake: str = "amount_above_refundable") -> ToolCall:
    """A practice copy of `source` with that mistake, as the queue holds it."""
    practice = practice_plant(source=source, mistake=MISTAKES[mistake])
    assert practice is not None, f"{mistake} could not be planted in call {source.pk}"
    return ToolCall.objects.select_related("run").get(pk=practice.tool_call_id)


def practice_of(call: ToolCall) -> PracticeCall:
    return PracticeCall.objects.get(tool_call=call)
