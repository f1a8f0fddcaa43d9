"""Deciding a held model turn — Continue, Add a note, Write the reply — and what happens when nobody does.

The same path as a tool call's decision (decisions.toolcall_decide): lock the call, check it is pending,
that this reviewer may decide it and that what they were shown (the transcript's hash) is what is held;
store one final decision; record it in the trail; resume the run on commit. The loop applies it once
(services/turns.py).

Expiry fails closed: a turn nobody decided in time is expired by the system and the run fails with the
reason, for a person to Retry (which holds the turn for review again, if a rule still says so). The model
is never called on a turn that a rule holds and nobody decided. A remote agent's turn is expired and its
agent told (long-poll, webhook): it must not call its model on that turn.
"""

from django.contrib.auth.models import User
from django.db import transaction

from approvals import audit, live

from ..models import AuditEvent, Decision, Run, ToolCall
from .decisions import UNCLAIM, _locked_pending, _storable_texts, _store
from .errors import DecisionError, EditInvalid, NotAllowed
from .runs import request_resume, run_fail

VERDICTS = (Decision.Verdict.APPROVE, Decision.Verdict.NOTE, Decision.Verdict.REPLY)
TEXT_NEEDED: dict[str, tuple[str, str]] = {
    Decision.Verdict.NOTE: ("note", "Write the note the model should read before it answers."),
    Decision.Verdict.REPLY: ("reply", "Write the reply the customer should get; it becomes the assistant's answer."),
}


def _checked_text(verdict: str, text: str) -> str:
    if verdict not in VERDICTS:
        raise DecisionError("Choose Continue, Add note and continue, or Send this reply.")
    text = (text or "").strip()
    if verdict not in TEXT_NEEDED:
        return ""
    field, needed = TEXT_NEEDED[verdict]
    if not text:
        raise EditInvalid({field: [needed]})
    _storable_texts(**{field: text})
    return text


def turn_decide(*, call_id: int, reviewer: User, verdict: str, shown_hash: str, text: str = "") -> Decision:
    """Continue (approve), add a note (note) or write the reply (reply) for a held turn; one transaction."""
    text = _checked_text(verdict, text)
    with transaction.atomic():
        call = _locked_pending(call_id, reviewer, shown_hash)
        if call.kind != ToolCall.Kind.TURN:
            raise NotAllowed("This is not a model turn.")
        decision = _store(call, None, reviewer=reviewer, verdict=verdict, guidance=text)
        payload = {
            "verdict": verdict,
            "arguments_shown_hash": shown_hash,
            "arguments": call.arguments,
            "arguments_hash": call.arguments_hash,
            "text": text,
            "final": True,
        }
        audit.record(AuditEvent.Kind.DECIDED, tool_call=call, actor=reviewer, payload=payload)
        ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED, **UNCLAIM)
        request_resume(call.run_id, decided=call.pk)
        live.call_changed(call.pk)
    return decision


def turn_expire(*, call: ToolCall, reason: str) -> Decision:
    """Inside deadlines.toolcall_expire's transaction, the call locked and pending: expire it, fail the run."""
    decision = Decision.objects.create(
        tool_call=call, reviewer=None, verdict=Decision.Verdict.EXPIRE, reason=reason, round=call.review_round
    )
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXPIRED, **UNCLAIM)
    audit.record(AuditEvent.Kind.EXPIRED, tool_call=call, payload={"reason": reason})
    live.call_changed(call.pk)
    if not call.run.advancer.calls_model:  # its agent hears "expired" and must not call its model; the run is its own
        request_resume(call.run_id, decided=call.pk)
        return decision
    step = (call.arguments or {}).get("step")
    error = (
        f"Nobody reviewed model turn {step} in time ({reason}); the model was not called. "
        "Retry to hold the turn for review again."
    )
    run_fail(run=Run.objects.select_for_update().get(pk=call.run_id), error=error)
    return decision
