"""Helpers for the bad-input tests: a pending refund made through the gate, and what must hold after any input."""

import json

from approvals import services
from approvals.kinds.question import AnswerInvalid, validated_answer
from approvals.models import Decision, Message, Run, ToolCall
from approvals.services import ProposedCall
from approvals.tools import ArgumentsInvalid, registry

from .reviewing import model_reply

REFUND = {"order_id": "A-1001", "amount": 40.0, "reason": "Item arrived damaged"}


def new_run(requester, request: str = "Order A-1001 arrived broken. Please refund $40.") -> Run:
    run = Run.objects.create(agent="support", request=request, requested_by=requester)
    services.message_append(run=run, role=Message.Role.USER, content=request)
    return run


def propose(run: Run, *calls: ProposedCall, content: str = "I'll do it.") -> Message:
    """What the model's reply does to the record: the gate, in one transaction."""
    return services.step_record(run=run, content=content, calls=list(calls))


def pending_refund(requester, arguments: dict = REFUND) -> ToolCall:
    run = new_run(requester)
    propose(run, ProposedCall(call_id="call_1", name="issue_refund", raw_arguments=json.dumps(arguments)))
    return run.tool_calls.get(status=ToolCall.Status.PENDING)


def validates(tool_name: str, arguments) -> bool:
    tool = registry.get(tool_name)
    try:
        return tool is not None and tool.normalize(arguments) == arguments
    except ArgumentsInvalid:
        return False


def invalid_approvals() -> list[str]:
    """Approved, run or decided arguments that the tool's schema would refuse: there must be none."""
    bad = []
    approved = ToolCall.objects.filter(
        status__in=[ToolCall.Status.APPROVED, ToolCall.Status.EXECUTING, ToolCall.Status.EXECUTED]
    )
    for call in approved:
        if not validates(call.tool_name, call.approved_arguments):
            bad.append(f"call {call.pk} ({call.status}): {call.approved_arguments!r}")
    for decision in Decision.objects.filter(arguments__isnull=False).select_related("tool_call"):
        if decision.verdict == Decision.Verdict.ANSWER:  # an answer to a tool's question: its schema must take it
            if not answers(decision.tool_call.question, decision.arguments):
                bad.append(f"answer {decision.pk}: {decision.arguments!r}")
        elif not validates(decision.tool_call.tool_name, decision.arguments):
            bad.append(f"decision {decision.pk}: {decision.arguments!r}")
    return bad


def answers(question: dict, answer) -> bool:
    try:
        return validated_answer(question, answer) == answer
    except AnswerInvalid:
        return False


def pending_question(requester) -> ToolCall:
    """Dana's "which order?" question, asked by choose_order through the gate (no model needed)."""
    run = new_run(requester, "I'm dana.smith@example.com, my item arrived broken, please refund it.")
    calls = [ProposedCall(call_id="call_1", name="choose_order", raw_arguments='{"email": "dana.smith@example.com"}')]
    model_reply(run, "Which order?", calls)
    return run.tool_calls.get(status=ToolCall.Status.PENDING, kind=ToolCall.Kind.QUESTION)
