"""A Google ADK agent served by ag-ui-adk 0.11.0 (a real process, examples/agui/adk_refund.py) whose refund tool
asks for ADK's tool confirmation: ag-ui-adk ends the run with an interrupt about its adk_request_confirmation
call, which wraps the refund; ReviewHub shows the refund as the card and resumes the agent with the decision,
which ag-ui-adk hands to the tool as its ToolConfirmation (approved, edited arguments, or the reason)."""

import json

import pytest
from ag_ui.core import (
    EventType,
    Interrupt,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    ToolCallArgsEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)

from agui.conversation import Conversation
from approvals.models import Message, Run, ToolCall

from .aguiagents import REQUEST, advance, decide, declare, refund_call, serve, start

live = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def adk_server(model_server_instance, tmp_path_factory):
    yield from serve("adk_refund.py", tmp_path_factory, model_server_instance.url)


@pytest.fixture
def adk(adk_server, model, roles):
    adk_server.forget_refunds()
    declare("refunds-adk", adk_server.url)
    return adk_server


def started(requester, *replies, model) -> Run:
    return start("refunds-adk", requester, model, *replies)


@live
def test_the_refund_waits_as_a_card_for_the_call_adks_confirmation_wraps(adk, model, requester):
    run = started(requester, {"content": "Refunding.", "tool_calls": [refund_call()]}, model=model)
    [call] = run.tool_calls.all()
    assert run.status == Run.Status.WAITING and call.status == ToolCall.Status.PENDING
    assert call.tool_name == "refunds-adk.issue_refund" and call.arguments["amount"] == 490
    assert call.description == "Refund 490 on order A-1001 (broken)"
    assert run.messages.filter(role=Message.Role.USER, content=REQUEST).exists()
    assert not run.messages.filter(role=Message.Role.TOOL).exists()  # the tool's "waiting" answer is not a result
    assert adk.refunds() == []


@live
def test_an_approval_runs_the_refund_once_and_the_agents_model_reads_its_result(adk, model, requester, reviewer):
    run = started(
        requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Refunded, sorry!"}, model=model
    )
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")
    advance(run)
    call.refresh_from_db()
    assert adk.refunds() == [{"order_id": "A-1001", "amount": 490, "reason": "broken"}]
    assert call.status == ToolCall.Status.EXECUTED and "Refunded $490.00 on A-1001." in call.output
    assert run.status == Run.Status.COMPLETED
    assert run.messages.filter(role=Message.Role.ASSISTANT, content="Refunded, sorry!").exists()
    assert len(model.requests()) == 2  # the tool's "waiting" answer did not go to the model
    assert "Refunded $490.00 on A-1001." in str(model.requests()[-1]["messages"])


@live
def test_an_edit_to_49_is_what_the_adk_tool_runs(adk, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Done."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "edit", arguments={"order_id": "A-1001", "amount": 49, "reason": "broken"})
    advance(run)
    assert adk.refunds() == [{"order_id": "A-1001", "amount": 49, "reason": "broken"}]
    assert run.status == Run.Status.COMPLETED
    assert "Refunded $49.00 on A-1001." in str(model.requests()[-1]["messages"])


@live
def test_a_rejection_reason_is_what_the_adk_agents_model_reads_and_nothing_is_refunded(adk, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "I will not."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "reject", reason="Refunds over $100 need the invoice")
    advance(run)
    assert adk.refunds() == []
    assert run.status == Run.Status.COMPLETED
    assert "Refunds over $100 need the invoice" in str(model.requests()[-1]["messages"])


@live
@pytest.mark.xfail(
    strict=True,
    reason="ag-ui-adk 0.11.0 hands each run of consecutive tool messages to ADK as a submission of its own "
    "(_get_unseen_messages batches, adk_agent.py); its TOOL_CALL_START events carry no parentMessageId, so each "
    "adk_request_confirmation call is an assistant message of its own and the two resume entries land in two "
    "batches: only the last confirmation reaches its tool, the approved refund never runs",
)
def test_two_refunds_at_once_one_approved_one_rejected(adk, model, requester, reviewer, reviewer2):
    two = [refund_call(490, call_id="call_a"), refund_call(18, "A-1003", call_id="call_b")]
    run = started(requester, {"content": "", "tool_calls": two}, {"content": "Both handled."}, model=model)
    first, second = run.tool_calls.order_by("pk")
    decide(first, reviewer, "approve")
    advance(run)
    decide(second, reviewer2, "reject", reason="A-1003 was never delivered")
    advance(run)
    first.refresh_from_db()
    assert first.status == ToolCall.Status.APPROVED  # nothing reported it ran: not taken as executed
    assert adk.refunds() == [{"order_id": "A-1001", "amount": 490, "reason": "broken"}]


def _confirmation_stream(original_id: str, wrapped: dict) -> Conversation:
    """What ag-ui-adk streams for a tool that asks for confirmation: the call, then its confirmation request."""
    seen = Conversation(messages=[UserMessage(id="m1", role="user", content=REQUEST)])
    refund = json.dumps(refund_call()["arguments"])
    for call_id, name, arguments in (
        (original_id, "issue_refund", refund),
        ("adk-1", "adk_request_confirmation", json.dumps({"originalFunctionCall": wrapped})),
    ):
        seen.apply(ToolCallStartEvent(type=EventType.TOOL_CALL_START, tool_call_id=call_id, tool_call_name=name))
        seen.apply(ToolCallArgsEvent(type=EventType.TOOL_CALL_ARGS, tool_call_id=call_id, delta=arguments))
    interrupt = Interrupt(id="adk-1", reason="confirmation", tool_call_id="adk-1")
    outcome = RunFinishedInterruptOutcome(type="interrupt", interrupts=[interrupt])
    seen.apply(RunFinishedEvent(type=EventType.RUN_FINISHED, thread_id="t", run_id="r", outcome=outcome))
    return seen


def test_a_confirmation_request_is_about_the_call_it_wraps_when_that_call_is_in_the_stream():
    seen = _confirmation_stream("call_1", {"id": "call_1", "name": "issue_refund", "args": {}})
    assert seen.concerned_call(seen.interrupts[0]).name == "issue_refund"
    assert seen.interrupted_call_ids() == {"adk-1", "call_1"}


@pytest.mark.parametrize(
    "wrapped", [{"id": "call_9", "name": "issue_refund"}, {"id": "call_1", "name": "send_email"}, {"id": 1}]
)
def test_a_confirmation_request_naming_no_call_of_the_stream_stays_the_call_it_is(wrapped):
    seen = _confirmation_stream("call_1", wrapped)  # then it is refused as an undeclared tool: nothing runs
    assert seen.concerned_call(seen.interrupts[0]).name == "adk_request_confirmation"


def test_a_tool_result_the_input_held_already_is_not_one_this_stream_reported():
    waiting = ToolMessage(id="t1", role="tool", content="Waiting for approval.", tool_call_id="call_1")
    seen = Conversation(messages=[UserMessage(id="m1", role="user", content=REQUEST), waiting])
    seen.apply(RunFinishedEvent(type=EventType.RUN_FINISHED, thread_id="t", run_id="r"))
    assert seen.results() == {}
