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

from django.db import transaction

from approvals import services, storable
from approvals.models import Message, Run, ToolCall
from approvals.tools import registry

from . import llm

log = logging.getLogger(__name__)

TOOLS, TURN = "tools", "turn"
RUNNABLE = (ToolCall.Status.APPROVED, ToolCall.Status.EXECUTING)


def transcript(run: Run) -> list[dict]:
    return [m.as_openai() for m in run.messages.order_by("seq")]


def advance(run_id: int, *, only: str | None = None) -> str | None:
    """Take the run as far as it can go now (see the module's docstring for `only`).

    Whatever goes wrong, it is not left "running": an unexpected error fails it
    with the reason, and its page offers Retry."""
    try:
        return _advance(run_id, only=only)
    except Exception as exc:
        log.exception("advancing run %s failed", run_id)
        _fail_unexpectedly(run_id, exc)
        return None


def _fail_unexpectedly(run_id: int, exc: Exception) -> None:
    """Fail the run, unless it has already finished (cancelled meanwhile, say)."""
    error = f"The run stopped on an unexpected error: {type(exc).__name__}: {exc}"
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id, status__in=Run.ACTIVE).first()
        if run is not None:
            services.run_fail(run=run, error=storable.escape(error, limit=1000))


def _advance(run_id: int, *, only: str | None) -> str | None:
    run = Run.objects.get(pk=run_id)
    while run.is_active:
        step = run.open_step()
        if step is not None and not services.step_is_answered(message=step):
            if only == TURN and step.calls.filter(status__in=RUNNABLE).exists():
                return TOOLS
            for call in step.calls.filter(status__in=RUNNABLE):
                services.toolcall_execute(call=call)
            if not services.step_is_answered(message=step):
                if step.calls.filter(status=ToolCall.Status.PENDING).exists():
                    services.run_set_status(run=run, status=Run.Status.WAITING)
                return
        last = run.messages.order_by("-seq").first()
        if last.role == Message.Role.ASSISTANT and not last.tool_calls:
            services.run_complete(run=run)
            return
        if run.step_count >= run.max_steps:
            services.run_fail(run=run, error=f"Stopped after {run.max_steps} model turns (the step limit).")
            return
        if only == TOOLS:
            return TURN
        was_waiting = run.status == Run.Status.WAITING
        if not services.run_begin_turn(run=run):
            return  # another worker is taking this turn
        if was_waiting:
            services.run_resumed(run=run)
        try:
            reply = llm.complete(transcript(run), registry.openai_specs(agent=run.agent))
        except llm.ModelError as exc:
            services.run_fail(run=run, error=str(exc))
            return
        if services.step_record(run=run, content=reply.content, calls=reply.calls, turn=run.step_count) is None:
            return  # the turn outlived its lease and was given to another worker
        run.refresh_from_db()
        if not reply.calls:
            services.run_complete(run=run)
            return
