"""What a stream from an AG-UI agent leaves in the record: transcript rows, calls, and the run's state."""

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from approvals import audit, live, services
from approvals.models import Message, Run, ToolCall

from . import interrupts, offered
from .conversation import Conversation, Seen
from .models import AguiAgent, Exchange


def _result_of_call(run: Run, call_id: str, result: str) -> bool:
    """The result of a call a person decided (an interrupt answered before): executed, its output recorded once."""
    call = ToolCall.objects.filter(run=run, call_id=call_id).first()
    if call is None:
        return False
    if ToolCall.objects.filter(pk=call.pk, status__in=ToolCall.RUNNABLE).update(
        status=ToolCall.Status.EXECUTED, executed_at=timezone.now()
    ):
        payload = {"reported_by": run.agent, "arguments": call.approved_arguments, "ok": True, "output": result}
        audit.record(audit.AuditEvent.Kind.EXECUTED, tool_call=call, payload=payload)
        services.record_output(call=call, output=result)
        live.call_changed(call.pk)
    return True


def _call_rows(run: Run, seen: Seen) -> None:
    if seen.result is not None and _result_of_call(run, seen.id, seen.result):
        return
    spec = {"id": seen.id, "type": "function", "function": {"name": seen.name, "arguments": seen.arguments or "{}"}}
    services.message_append(run=run, role=Message.Role.ASSISTANT, tool_calls=[spec])
    if seen.result is not None:
        services.message_append(run=run, role=Message.Role.TOOL, content=seen.result, tool_call_id=seen.id)


def _transcript(run: Run, seen: Conversation, paused: set[str] | None = None) -> None:
    """Text and the calls the agent ran itself, in the stream's order; the calls it paused on (its interrupts',
    and the calls of offered tools it left for ReviewHub to run) are the step's, and so is its text then."""
    if paused is None:
        paused = seen.interrupted_call_ids()
    step = bool(seen.interrupts or paused)
    for kind, key in seen.order:
        if kind == "text" and seen.texts[key].strip() and not step:
            services.message_append(run=run, role=Message.Role.ASSISTANT, content=seen.texts[key])
        elif kind == "call" and key not in paused:
            _call_rows(run, seen.calls[key])
    for call_id, result in seen.results().items():  # results only a snapshot told of, of calls decided here
        if call_id not in seen.calls:
            _result_of_call(run, call_id, result)
    for text in seen.snapshot_texts() if not step else ():
        services.message_append(run=run, role=Message.Role.ASSISTANT, content=text)


def finished(*, exchange: Exchange, agent: AguiAgent, seen: Conversation) -> None:
    run = exchange.run
    if not seen.finished and not seen.error:
        return broken(exchange=exchange, seen=seen, problem="the stream ended without RUN_FINISHED")
    client_calls = offered.pending(exchange, seen) if not seen.error else []
    paused = seen.interrupted_call_ids() | {c.id for c in client_calls}
    with transaction.atomic():
        _transcript(run, seen, paused)
        status = Exchange.Status.FINISHED
        if seen.error:
            status = Exchange.Status.FAILED
            services.run_fail(run=run, error=f"The AG-UI agent reported an error: {seen.error}")
        elif seen.interrupts or client_calls:
            status = Exchange.Status.INTERRUPTED
            calls = interrupts.interrupts_propose(exchange=exchange, agent=agent, seen=seen, client_calls=client_calls)
            waiting = any(
                c.status == ToolCall.Status.PENDING for c in ToolCall.objects.filter(pk__in=[c.pk for c in calls])
            )
            services.run_set_status(run=run, status=Run.Status.WAITING if waiting else Run.Status.RUNNING)
        else:
            services.run_complete(run=run)
        Exchange.objects.filter(pk=exchange.pk).update(status=status, messages=seen.messages_json(), last_error="")


def unreachable(*, exchange: Exchange, agent: AguiAgent, problem: str) -> float | None:
    """Try again later, saying so on the run; after the last attempt, fail the run with the reason."""
    attempts, limit = exchange.attempts, settings.AGUI_CONNECT_ATTEMPTS
    if attempts >= limit:
        Exchange.objects.filter(pk=exchange.pk).update(status=Exchange.Status.FAILED, last_error=problem)
        reason = f"The AG-UI agent {agent.name} could not be reached ({attempts} attempts): {problem}."
        reason += " Retry sends the same input again."
        services.run_fail(run=exchange.run, error=reason)
        return None
    delay = settings.AGUI_RETRY_SECONDS
    said = f"The AG-UI agent {agent.name} cannot be reached (attempt {attempts} of {limit}): {problem}."
    said += f" Trying again in {delay:g} s."
    Exchange.objects.filter(pk=exchange.pk).update(status=Exchange.Status.READY, last_error=problem)
    Run.objects.filter(pk=exchange.run_id, status__in=Run.ACTIVE).update(last_error=said, updated_at=timezone.now())
    audit.record(audit.AuditEvent.Kind.RESUMED, run=exchange.run, payload={"agui_unreachable": said})
    live.run_changed(exchange.run_id)
    return delay


def broken(*, exchange: Exchange, seen: Conversation, problem: str) -> None:
    """The agent took the input and the stream went wrong: what arrived is recorded, the run fails (Retry)."""
    with transaction.atomic():
        _transcript(
            exchange.run, Conversation(messages=seen.messages, texts=seen.texts, calls=seen.calls, order=seen.order)
        )
        Exchange.objects.filter(pk=exchange.pk).update(
            status=Exchange.Status.FAILED, last_error=problem, messages=seen.messages_json()
        )
        services.run_fail(
            run=exchange.run, error=f"The AG-UI agent's stream failed: {problem}. Retry sends the same input again."
        )
