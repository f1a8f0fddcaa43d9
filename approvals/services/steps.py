"""A model turn's reply recorded in one transaction: the run, the transcript rows, the calls and their trail.

The gate (gate.py) works out everything a call needs before this transaction (policy,
descriptions, facts, the output of read-only calls run at once), so the locks taken
here — the run's row, then its audit chain's head — are held for a handful of
statements, whatever the step and however long the run's history.
"""

import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel

from approvals import audit, live
from approvals.lib.hashing import args_hash

from ..models import AuditEvent, Message, PolicyRule, Run, ShadowResult, ToolCall
from ..tools import Ask, Tool, ToolContext, ToolError
from .runs import opened
from .transcript import messages_insert, seq_after_last

log = logging.getLogger(__name__)


@dataclass
class Gated:
    """One call as the gate left it, not stored yet: its first event, and whatever ran already."""

    call: ToolCall
    kind: str
    payload: dict
    tool: Tool | None = None
    args: BaseModel | None = None
    shadow: list[tuple[PolicyRule, str]] = field(default_factory=list)
    ran_with_key: str = ""  # a read-only call run before the step was stored, under this key


def run_tool_body(call: ToolCall, tool: Tool, args, context: ToolContext) -> tuple[str, str]:
    """The tool's own code: its status and output; an error becomes the output, never an exception."""
    try:
        return ToolCall.Status.EXECUTED, tool.run(args, context)
    except Ask:
        raise  # a question for a person: the caller makes the call wait (services/questions.py)
    except ToolError as exc:
        return ToolCall.Status.FAILED, f"Error: {exc}"
    except Exception as exc:
        log.exception("tool %s failed", call.tool_name)
        return ToolCall.Status.FAILED, f"Error: {call.tool_name} failed: {exc}"


def _run_fields(run: Run, gated: list[Gated], *, model_reply: bool, settles: bool) -> dict:
    """What the step changes on the run: the turn is over, and for the model's reply the run completes (no calls)
    or the next turn is claimed (every call has its output); proposed by its advancer (`settles`), the run waits
    while a call is pending, else it runs."""
    now = timezone.now()
    fields = {"thinking": False, "updated_at": now}
    if settles:
        waits = any(g.call.status == ToolCall.Status.PENDING for g in gated)
        fields |= {"status": Run.Status.WAITING if waits else Run.Status.RUNNING, "last_error": ""}
    if model_reply and not gated:
        fields |= {"status": Run.Status.COMPLETED, "finished_at": now, "last_error": ""}
    elif model_reply and gated and all(g.call.output_recorded for g in gated) and run.step_count < run.max_steps:
        fields |= {"thinking": True, "status": Run.Status.RUNNING, "step_count": run.step_count + 1}
    return fields


def _trail(gated: list[Gated], run: Run, completes: bool) -> list[audit.Entry]:
    entries = [audit.Entry(g.kind, g.call, payload=g.payload) for g in gated]
    # A call that ran before its step was stored gets one event for its run: what ran (arguments and their hash,
    # the idempotency key) and what came of it. "executing", written durably before a body runs, belongs to calls
    # run after their step (execution.py); written here, after the body, it would say nothing more.
    for g in (g for g in gated if g.ran_with_key):
        arguments = g.call.approved_arguments
        ran = {"arguments": arguments, "arguments_hash": args_hash(arguments), "idempotency_key": g.ran_with_key}
        kind = AuditEvent.Kind.EXECUTED if g.call.status == ToolCall.Status.EXECUTED else AuditEvent.Kind.FAILED
        entries.append(audit.Entry(kind, g.call, payload=ran | {"dry_run": run.dry_run, "output": g.call.output}))
    if completes:
        entries.append(audit.Entry(AuditEvent.Kind.COMPLETED, payload={"steps": run.step_count}))
    return entries


def _transcript_rows(run: Run, content: str, gated: list[Gated], first: list[Message], seq) -> list[Message]:
    """`first` (the user's request, when new), the assistant's message, and an output for each call that has one
    already, numbered by seq(offset). The assistant's message is the one after `first`."""
    calls = [
        {
            "id": g.call.call_id,
            "type": "function",
            "function": {"name": g.call.tool_name, "arguments": g.call.raw_arguments},
        }
        for g in gated
    ]
    message = Message(run=run, role=Message.Role.ASSISTANT, content=content, tool_calls=calls)
    outputs = [
        Message(run=run, role=Message.Role.TOOL, content=g.call.output, tool_call_id=g.call.call_id)
        for g in gated
        if g.call.output_recorded
    ]
    rows = [*first, message, *outputs]
    for offset, row in enumerate(rows):
        row.seq = seq(offset)
    return rows


def _numbering(run: Run, next_seq: int | None):
    """seq(offset) for the step's rows: from `next_seq` when the caller knows it; else worked out by the INSERT
    itself under the run's row lock, which the step holds (no statement of its own)."""
    if next_seq is not None:
        return lambda offset: next_seq + offset
    return lambda offset: seq_after_last(run, offset)


def _run_updated(run: Run, turn: int | None, fields: dict) -> bool:
    """The step's change to the run, which locks its row (a run from run_open() is inserted with it)."""
    for key, value in fields.items():
        setattr(run, key, value)
    if run.pk is None:
        run.save(force_insert=True)
        return True
    runs = Run.objects.filter(pk=run.pk)
    if turn is not None:
        runs = runs.filter(step_count=turn, thinking=True, status__in=Run.ACTIVE)
    return bool(runs.update(**fields)) or turn is None


@transaction.atomic
def step_store(
    *,
    run: Run,
    turn: int | None,
    content: str,
    gated: list[Gated],
    next_seq: int | None,
    request: str = "",
    settles: bool = False,
) -> Message | None:
    """Store one step: about six statements (run, messages, calls, chain head, trail with its head), one
    transaction. A run from run_open() is stored with it: its request as message 0, run_started first in its trail.

    With `turn`, the step is the model's reply to that turn (services.model_reply_record), stored only while the
    turn is still the caller's. `request`: the user's new request, appended before the step's message. The calls
    as stored are `message.step_calls`."""
    opening = run.pk is None
    fields = _run_fields(run, gated, model_reply=turn is not None, settles=settles)
    if not _run_updated(run, turn, fields):
        return None
    first, entries = opened(run) if opening else ([], [])
    first += [Message(run=run, role=Message.Role.USER, content=request)] if request and not opening else []
    rows = _transcript_rows(run, content, gated, first, _numbering(run, 0 if opening else next_seq))
    messages_insert(rows)
    message = rows[len(first)]
    for g in gated:
        g.call.message = message
    ToolCall.objects.bulk_create([g.call for g in gated])
    shadows = [ShadowResult(rule=rule, tool_call=g.call, outcome=outcome) for g in gated for rule, outcome in g.shadow]
    if shadows:
        ShadowResult.objects.bulk_create(shadows)
    completes = fields.get("status") == Run.Status.COMPLETED
    audit.record_many(run, entries + _trail(gated, run, completes), new_chain=opening)
    for g in gated:
        if g.call.status == ToolCall.Status.PENDING:
            live.call_changed(g.call.pk)
    live.run_changed(run.pk)
    message.step_calls = [g.call for g in gated]
    return message
