"""Interrupts as pauses of the one machinery, and the decisions as resume entries.

A tool-call interrupt is the call it names (its name and arguments from the stream) put through approvals'
gate as a proposal of the agent's declared tool: schema, tier, rules, groups, description, expiry, the card.
An interrupt with a responseSchema and no tool call is a question (a form from the schema) of the agent's
"question" declaration. Once none of an exchange's interrupts is pending, each gets its resume entry:
approved ({"approved": true, "editedArgs": ...} when edited), rejected or refused ({"approved": false,
"reason": ...}, which the agent's model reads), an answer (the answer itself), or cancelled (expired,
cancelled, a question declined) — the payload shape Pydantic AI's adapter advertises for tool approvals.
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from ag_ui.core import Interrupt as AguiInterrupt
from ag_ui.core import ResumeEntry
from django.utils import timezone

from approvals import services
from approvals.models import Decision, ToolCall
from remote.models import DeclaredTool, RemoteCall

from . import offered
from .conversation import Conversation, Seen
from .models import AguiAgent, ClientCall, Exchange, Interrupt

QUESTION_TOOL = "question"
QUESTION_DECLARATION = {
    "description": "The agent asks a person (an AG-UI interrupt without a tool call).",
    "input_schema": {"type": "object", "properties": {"reason": {"type": "string"}, "message": {"type": "string"}}},
    "tier": "approval",
    "description_template": "The agent asks: {message}",
    "decisions": ["reject"],
    "key_fields": [],
}
SETTLED_REFUSED = (ToolCall.Status.INVALID, ToolCall.Status.FORBIDDEN, ToolCall.Status.REJECTED)


def _proposal(agent: AguiAgent, interrupt: AguiInterrupt, seen: Conversation) -> services.ProposedCall:
    call = seen.concerned_call(interrupt)
    if call is not None:
        return services.ProposedCall(call.id, f"{agent.name}.{call.name}", call.arguments or "{}")
    arguments = {"reason": interrupt.reason, "message": interrupt.message or interrupt.reason}
    return services.ProposedCall(interrupt.id, f"{agent.name}.{QUESTION_TOOL}", json.dumps(arguments))


def _expiry(value: str | None) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


def _bind(call: ToolCall, agent: AguiAgent, interrupt: AguiInterrupt, exchange: Exchange) -> None:
    """The interrupt's row, the declaration the call was shown under, its deadline and its question."""
    name = call.tool_name.partition(".")[2]
    tool = DeclaredTool.objects.filter(agent=agent.declarer, name=name, current=True).first()
    sent = interrupt.model_dump(mode="json", by_alias=True, exclude_none=True)
    Interrupt.objects.create(exchange=exchange, interrupt_id=interrupt.id, tool_call=call, sent=sent)
    RemoteCall.objects.create(
        tool_call=call,
        agent=agent.declarer,
        tool=tool,
        thread_id=exchange.input["threadId"],
        idempotency_key=f"agui-{exchange.run_id}-{exchange.seq}-{interrupt.id}"[:200],
        request_hash="",
    )
    if call.status != ToolCall.Status.PENDING:
        return
    deadline = _expiry(interrupt.expires_at)
    if deadline is not None and (call.expires_at is None or deadline < call.expires_at):
        ToolCall.objects.filter(pk=call.pk).update(expires_at=deadline)
    if name == QUESTION_TOOL and interrupt.response_schema:
        question = {"prompt": interrupt.message or interrupt.reason, "schema": interrupt.response_schema}
        services.question_from_agent(call=call, question=question | {"payload": {}})


def interrupts_propose(
    *, exchange: Exchange, agent: AguiAgent, seen: Conversation, client_calls: Sequence[Seen] = ()
) -> list[ToolCall]:
    """Every interrupt of the stream, and every call of an offered tool it left for the client (agui/offered.py),
    as a call of one assistant step (in the caller's transaction)."""
    proposals = [_proposal(agent, interrupt, seen) for interrupt in seen.interrupts]
    proposals += [offered.proposal(call) for call in client_calls]
    reasoning = "\n".join(seen.all_texts())
    message = services.step_record(run=exchange.run, content=reasoning, calls=proposals)
    calls = list(message.calls.order_by("pk"))
    for call, interrupt in zip(calls, seen.interrupts, strict=False):
        _bind(call, agent, interrupt, exchange)
    ClientCall.objects.bulk_create(
        [ClientCall(exchange=exchange, tool_call=call) for call in calls[len(seen.interrupts) :]]
    )
    return calls


def _reason(call: ToolCall) -> str:
    decision = call.final_decision()
    if decision is None or decision.verdict != Decision.Verdict.REJECT:
        return call.output or f"Not run: the call is {call.status}."
    said = decision.reason
    return f"{said} Guidance from the reviewer: {decision.guidance}" if decision.guidance else said


def resume_entry(call: ToolCall, interrupt_id: str) -> ResumeEntry:
    if call.kind == ToolCall.Kind.QUESTION:
        decision = call.final_decision()
        if call.status == ToolCall.Status.EXECUTED and decision is not None:
            return ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=decision.arguments)
        return ResumeEntry(interrupt_id=interrupt_id, status="cancelled")
    if call.status in (ToolCall.Status.APPROVED, ToolCall.Status.EXECUTING, ToolCall.Status.EXECUTED):
        payload = {"approved": True}
        if call.approved_arguments is not None and call.approved_arguments != call.arguments:
            payload["editedArgs"] = call.approved_arguments
        return ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=payload)
    if call.status in SETTLED_REFUSED:
        return ResumeEntry(
            interrupt_id=interrupt_id, status="resolved", payload={"approved": False, "reason": _reason(call)}
        )
    return ResumeEntry(interrupt_id=interrupt_id, status="cancelled")  # expired, cancelled


def resume_entries(exchange: Exchange) -> list[ResumeEntry] | None:
    """One entry per interrupt of this exchange, once none is pending (else None: the run waits)."""
    rows = list(exchange.interrupts.select_related("tool_call__run").order_by("pk"))
    if any(row.tool_call.status == ToolCall.Status.PENDING for row in rows):
        return None
    return [resume_entry(row.tool_call, row.interrupt_id) for row in rows]
