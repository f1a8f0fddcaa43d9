"""Advance a run: execute what was approved, call the model when a step is
answered, put its tool calls through the gate, and stop when someone must decide.

Nothing here waits for a person: a run that needs a decision is left WAITING in
the database, and a decision enqueues advance() again, possibly hours later.

Model turns and tool execution can run in different places (Celery queues, thread
pools): with `only`, advance() does one kind of work and returns the kind that comes
next, for the caller to queue where that kind runs.
Nothing is left stuck either: an unexpected error fails the run with the reason.
"""

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction

from approvals import services
from approvals.lib import storable
from approvals.models import Message, Run, ToolCall
from approvals.tools import registry

from . import checkpoints, llm

log = logging.getLogger(__name__)

TOOLS, TURN = "tools", "turn"


def open_step(messages: list[Message]) -> tuple[Message | None, bool]:
    """The last assistant message if it asked for tools, and whether every one of its calls has an output."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == Message.Role.ASSISTANT:
            step = messages[index]
            if not step.tool_calls:
                return None, True
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == Message.Role.TOOL}
            return step, all(c["id"] in answered for c in step.tool_calls)
    return None, True


def advance(run_id: int, *, only: str | None = None) -> str | None:
    """Take the run as far as it can go now (see the module's docstring for `only`).

    Whatever goes wrong, it is not left "running": an unexpected error fails it
    with the reason, and its page offers Retry."""
    try:
        return _advance_on_a_live_connection(run_id, only=only)
    except Exception as exc:
        log.exception("advancing run %s failed", run_id)
        _fail_unexpectedly(run_id, exc)
        return None


def _advance_on_a_live_connection(run_id: int, *, only: str | None) -> str | None:
    """A connection that its server cut (a restart; runtime/connections.py) is replaced and the run taken further
    once more from the start, as the sweep would later: what was committed stands, and a call already claimed is
    never claimed again. A second failure is the run's."""
    try:
        return _advance(run_id, only=only)
    except (InterfaceError, OperationalError):
        if connection.in_atomic_block or connection.is_usable():
            raise
        log.warning("run %s: the database connection was lost; taking the run further on a new one", run_id)
        connection.close()
        return _advance(run_id, only=only)


def _fail_unexpectedly(run_id: int, exc: Exception) -> None:
    """Fail the run, unless it has already finished (cancelled meanwhile, say)."""
    error = f"The run stopped on an unexpected error: {type(exc).__name__}: {exc}"
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id, status__in=Run.ACTIVE).first()
        if run is not None:
            services.run_fail(run=run, error=storable.escape(error, limit=1000))


def _advance(run_id: int, *, only: str | None) -> str | None:
    if only == TOOLS:
        _run_approved_first(run_id)
    run = Run.objects.get(pk=run_id)
    owned = False  # whether this worker holds the next model turn, claimed by the last step's commit
    messages: list[Message] = []
    while run.is_active:
        # The transcript, once per step: in full the first time, then only the rows added since (it is append-only).
        messages += run.messages.filter(seq__gt=messages[-1].seq if messages else -1).order_by("seq")
        step, answered = open_step(messages)
        if step is not None and not answered:
            if only == TURN and step.calls.filter(status__in=ToolCall.RUNNABLE).exists():
                return TOOLS
            if not _answer_step(run, step):
                return None
            continue
        if step is not None and checkpoints.settle(run, step):
            continue  # a checkpoint's draft, decided: the run's answer, or the reason it has none
        if messages[-1].role == Message.Role.ASSISTANT and not messages[-1].tool_calls:
            services.run_complete(run=run)
            return None
        if not owned and run.step_count >= run.max_steps:
            services.run_fail(run=run, error=f"Stopped after {run.max_steps} model turns (the step limit).")
            return None
        if only == TOOLS:
            return TURN
        if not owned and not _begin_turn(run):
            return None  # another worker is taking this turn
        reviewed = services.turn_review(run=run, transcript=messages, claimed_by_step=owned)  # a rule may hold it
        if reviewed is None:
            return None  # held, or a reviewer wrote the reply
        took = _take_turn(run, reviewed)
        if took is None:
            return None
        messages, owned = reviewed, took
    return None


def _take_turn(run: Run, messages: list[Message]) -> bool | None:
    """One model turn and its step, recorded in one commit. Whether this worker holds the next turn
    (claimed by that commit); None when the run stops here (the model failed, or the turn was given away)."""
    transcript = [m.as_openai() for m in messages]
    turn = run.step_count
    try:
        with services.Renewing(lambda: services.turn_renew(run_id=run.pk, step=turn), settings.TURN_LEASE_SECONDS):
            reply = llm.complete(transcript, registry.openai_specs(agent=run.agent))
    except llm.ModelError as exc:
        services.run_fail(run=run, error=str(exc))
        return None
    content, calls = checkpoints.hold_final_answer(run, reply.content, reply.calls, transcript)
    recorded = services.model_reply_record(run=run, turn=turn, transcript=messages, content=content, calls=calls)
    if recorded is None:
        return None  # the turn outlived its lease and was given to another worker
    return run.thinking and run.step_count == turn + 1


def _run_approved_first(run_id: int) -> None:
    """Approved calls first, before anything else is read: a decision's resumption waits for nothing else."""
    for call in services.approved_in_run(run_id):
        services.toolcall_execute(call=call, loaded=True)


def _begin_turn(run: Run) -> bool:
    was_waiting = run.status == Run.Status.WAITING
    if not services.run_begin_turn(run=run):
        return False
    if was_waiting:
        services.run_resumed(run=run)
    return True


def _answer_step(run: Run, step: Message) -> bool:
    """Run the step's approved calls; whether that answered it (if not and some are pending, the run waits)."""
    for call in step.calls.filter(status__in=ToolCall.RUNNABLE):
        services.toolcall_execute(call=call)
    if services.step_is_answered(message=step):
        return True
    if step.calls.filter(status=ToolCall.Status.PENDING).exists():
        services.run_set_status(run=run, status=Run.Status.WAITING)
    return False
