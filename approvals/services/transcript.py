"""The run's transcript: appending rows, and giving the model each tool call's output once."""

from django.db import transaction
from django.db.models import Max, Subquery, Value
from django.db.models.functions import Coalesce

from approvals import live

from ..models import Decision, Message, Run, ToolCall


def message_append(*, run: Run, role: str, content: str = "", tool_calls=None, tool_call_id: str = "") -> Message:
    """Append a transcript row; the run row is locked so sequence numbers never collide."""
    with transaction.atomic():
        run_lock(run_id=run.pk)
        return _append_locked(run, role=role, content=content, tool_calls=tool_calls, tool_call_id=tool_call_id)


def run_lock(*, run_id: int) -> None:
    """Lock the run's row for this transaction (transcript rows are appended under it), reading nothing of it."""
    Run.objects.select_for_update().filter(pk=run_id).values_list("pk", flat=True).first()


def seq_after_last(run: Run, offset: int = 0):
    """The run's next sequence number (plus `offset`), worked out by the INSERT that uses it: no statement of its
    own. Only under the run's row lock, which the caller holds, so that no other writer takes it meanwhile."""
    last = Subquery(Message.objects.filter(run_id=run.pk).order_by("-seq").values("seq")[:1])
    return Coalesce(last, Value(-1)) + Value(offset + 1)


def messages_insert(rows: list[Message]) -> None:
    """Insert transcript rows; a sequence number their INSERT worked out is read back only if someone asks."""
    Message.objects.bulk_create(rows)
    for row in rows:
        if hasattr(row.seq, "resolve_expression"):
            del row.__dict__["seq"]


def _append_locked(run: Run, *, role: str, content: str = "", tool_calls=None, tool_call_id: str = "") -> Message:
    """message_append() for a caller that holds the run's row lock already."""
    last = run.messages.aggregate(m=Max("seq"))["m"]
    message = Message.objects.create(
        run=run,
        seq=0 if last is None else last + 1,
        role=role,
        content=content or "",
        tool_calls=tool_calls or [],
        tool_call_id=tool_call_id,
    )
    live.run_changed(run.pk)
    return message


def record_output(*, call: ToolCall, output: str) -> None:
    """Give the model this call's output, once; after the step's last output, the reviewers' guidance.

    The run row is locked first (once: the rows appended here are appended under that lock), so of several
    outputs recorded at once exactly one sees the step answered, and the guidance follows every tool output
    of the step (valid OpenAI message order).
    """
    with transaction.atomic():
        run_lock(run_id=call.run_id)
        if not ToolCall.objects.filter(pk=call.pk, output_recorded=False).update(output=output, output_recorded=True):
            return
        call.output, call.output_recorded = output, True
        _append_locked(call.run, role=Message.Role.TOOL, content=output, tool_call_id=call.call_id)
        if _answered(call.message_id):
            _deliver_guidance(call.run, call.message_id)


def _deliver_guidance(run: Run, step_id: int) -> None:
    decisions = Decision.objects.filter(tool_call__message_id=step_id).exclude(guidance="").select_related("reviewer")
    lines = [f"Guidance from reviewer {d.reviewer_label}: {d.guidance}" for d in decisions.order_by("id")]
    if lines:
        _append_locked(run, role=Message.Role.USER, content="\n".join(lines))


def step_is_answered(*, message: Message) -> bool:
    return _answered(message.pk)


def _answered(step_id: int) -> bool:
    return not ToolCall.objects.filter(message_id=step_id, output_recorded=False).exists()
