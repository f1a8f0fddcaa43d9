"""AG-UI agents' runs: started, sent their input (once per exchange), their streams recorded, resumed.

run_advance() is the one entry (the background task's body): it makes the next exchange (the first input,
or the resume once no interrupt is pending: (run, seq) is unique, so of two workers one makes it), claims
it (READY -> SENDING, one winner), posts it and applies the stream. An agent that cannot be reached is
tried again AGUI_CONNECT_ATTEMPTS times (the run says so), then the run fails with the reason and Retry
sends the same input again.
"""

import uuid

from ag_ui.core import RunAgentInput, UserMessage
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from approvals import live, services
from approvals.models import Run
from remote.models import Thread
from remote.schemas import ToolIn
from remote.services import agent_get_or_create, tool_declare

from . import interrupts, offered, record, stream
from .conversation import Conversation
from .models import AguiAgent, Exchange


@transaction.atomic
def agent_save(*, agent: AguiAgent) -> AguiAgent:
    """Store the agent and its declarations (as a remote agent's, versioned; a tool left out is no longer current)."""
    if agent.declarer_id is None:
        agent.declarer, _ = agent_get_or_create(name=agent.name)
    agent.save()
    declarations = {interrupts.QUESTION_TOOL: interrupts.QUESTION_DECLARATION} | dict(agent.tools)
    for name, declaration in declarations.items():  # as the agent API takes them (defaults filled in)
        tool_declare(agent=agent.declarer, name=name, declaration=ToolIn.model_validate(declaration).model_dump())
    agent.declarer.tools.filter(current=True).exclude(name__in=declarations).update(current=False)
    return agent


@transaction.atomic
def agui_run_start(*, agent: AguiAgent, request: str, requested_by=None, dry_run: bool = False) -> Run:
    """A run of this agent, started like the demo agent's; the first input is sent after the commit."""
    if dry_run:
        raise services.NotAllowed("An AG-UI agent runs its own tools: it has no dry run.")
    run = services.run_create(
        agent=agent.name, request=request, requested_by=requested_by, advanced_by=Run.AdvancedBy.AGUI
    )
    Thread.objects.create(agent=agent.declarer, thread_id=f"reviewhub-{run.public_id}", run=run)
    return run


def _input(agent: AguiAgent, thread_id: str, messages: list, resume=None) -> dict:
    agui_input = RunAgentInput(
        thread_id=thread_id,
        run_id=f"run-{uuid.uuid4().hex}",
        protocol_version="1.0",
        messages=messages,
        state={},
        tools=offered.specs(agent),
        context=[],
        forwarded_props={},
        resume=resume,
    )
    return agui_input.model_dump(mode="json", by_alias=True, exclude_none=True)


def _next_exchange(run: Run) -> Exchange | None:
    """The exchange to send now, made if it is the first or a resume; None while the run waits or is sent.

    A resume goes once no interrupt and no call of an offered tool waits: one `resume` entry per interrupt, and
    the output of each call of an offered tool as a tool message after the thread's messages."""
    last = run.agui_exchanges.order_by("-seq").first()
    agent = AguiAgent.objects.get(name=run.agent)
    if last is None:
        thread = Thread.objects.get(run=run)
        first = UserMessage(id=f"msg-{uuid.uuid4().hex}", role="user", content=run.request)
        return Exchange.objects.create(run=run, seq=0, input=_input(agent, thread.thread_id, [first]))
    if last.status == Exchange.Status.FAILED and run.status == Run.Status.QUEUED:  # Retry: the same input again
        Exchange.objects.filter(pk=last.pk).update(status=Exchange.Status.READY, attempts=0)
        last.status, last.attempts = Exchange.Status.READY, 0
        return last
    if last.status == Exchange.Status.READY:
        return last
    if last.status != Exchange.Status.INTERRUPTED:
        return None
    entries, results = interrupts.resume_entries(last), offered.results(last)
    if entries is None or results is None:
        return None
    messages = last.messages + [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in results]
    payload = _input(agent, last.input["threadId"], messages, resume=entries or None)
    return Exchange.objects.create(run=run, seq=last.seq + 1, input=payload, messages=messages)


def exchange_next(*, run_id: int) -> Exchange | None:
    """Under the run's lock, and once: a second worker finds the exchange made, or the unique key refuses it."""
    try:
        with transaction.atomic():
            services.run_lock(run_id=run_id)
            run = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).first()
            return _next_exchange(run) if run is not None else None
    except IntegrityError:
        return None


def exchange_claim(*, exchange: Exchange) -> bool:
    """READY -> SENDING: exactly one caller sends it."""
    now = timezone.now()
    won = Exchange.objects.filter(pk=exchange.pk, status=Exchange.Status.READY).update(
        status=Exchange.Status.SENDING, claimed_at=now, attempts=F("attempts") + 1
    )
    if won:
        exchange.refresh_from_db()
        Run.objects.filter(pk=exchange.run_id, status__in=Run.ACTIVE).update(status=Run.Status.RUNNING, updated_at=now)
        live.run_changed(exchange.run_id)
    return bool(won)


def run_advance(*, run_id: int) -> float | None:
    """Run the approved calls of offered tools, then take the run further by one exchange; seconds after which to
    try again (0: at once, nothing waits for a person; else the agent was unreachable)."""
    offered.calls_execute(run_id=run_id)
    exchange = exchange_next(run_id=run_id)
    if exchange is None or not exchange_claim(exchange=exchange):
        return None
    agent = AguiAgent.objects.get(name=exchange.run.agent)
    seen = Conversation(messages=list(RunAgentInput.model_validate(exchange.input).messages))
    try:
        for event in stream.events(agent.endpoint_url, exchange.input, agent.headers()):
            seen.apply(event)
    except stream.Unreachable as exc:
        return record.unreachable(exchange=exchange, agent=agent, problem=str(exc))
    except stream.Broken as exc:
        record.broken(exchange=exchange, seen=seen, problem=str(exc))
        return None
    record.finished(exchange=exchange, agent=agent, seen=seen)
    exchange.refresh_from_db(fields=["status"])
    if exchange.status != Exchange.Status.INTERRUPTED:
        return None
    offered.calls_execute(run_id=run_id)  # what policy lets through runs at once, while the rest waits
    waiting = interrupts.resume_entries(exchange) is None or offered.results(exchange) is None
    return None if waiting else 0  # nothing waits: resume at once
