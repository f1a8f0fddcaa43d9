"""A LangGraph agent served by ag-ui-langgraph (a real process, examples/agui/langgraph_refund.py) whose refund
node calls interrupt(): ReviewHub posts its RunAgentInput, reads the stream with the SDK's types, turns each
interrupt into a card, and resumes the agent with the decisions, once."""

import threading

import pytest

from agui.models import Exchange
from approvals.models import Message, Run, ToolCall

from .aguiagents import REQUEST, advance, decide, declare, refund_call, serve, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def langgraph_server(model_server_instance, tmp_path_factory):
    yield from serve("langgraph_refund.py", tmp_path_factory, model_server_instance.url)


@pytest.fixture
def lg(langgraph_server, model, roles):
    langgraph_server.forget_refunds()
    declare("refunds-lg", langgraph_server.url)
    return langgraph_server


def started(requester, *replies, model) -> Run:
    return start("refunds-lg", requester, model, *replies)


def test_an_interrupt_before_the_refund_is_a_pending_card_with_our_description(lg, model, requester):
    run = started(requester, {"content": "Refunding.", "tool_calls": [refund_call()]}, model=model)
    [call] = run.tool_calls.all()
    assert run.status == Run.Status.WAITING and call.status == ToolCall.Status.PENDING
    assert call.tool_name == "refunds-lg.issue_refund" and call.arguments["amount"] == 490
    assert call.description == "Refund 490 on order A-1001 (broken)"
    assert run.messages.filter(role=Message.Role.USER, content=REQUEST).exists()
    assert lg.refunds() == []


def test_an_approval_resumes_the_agent_which_refunds_once_and_the_run_completes(lg, model, requester, reviewer):
    run = started(
        requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Refunded, sorry!"}, model=model
    )
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")
    advance(run)
    call.refresh_from_db()
    assert lg.refunds() == [{"order_id": "A-1001", "amount": 490, "reason": "broken"}]
    assert call.status == ToolCall.Status.EXECUTED and call.output == "Refunded $490.00 on A-1001."
    assert run.status == Run.Status.COMPLETED
    assert run.messages.filter(role=Message.Role.ASSISTANT, content="Refunded, sorry!").exists()


def test_an_edit_to_49_is_what_the_agent_runs(lg, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Done."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "edit", arguments={"order_id": "A-1001", "amount": 49, "reason": "broken"})
    advance(run)
    assert lg.refunds() == [{"order_id": "A-1001", "amount": 49, "reason": "broken"}]
    assert run.status == Run.Status.COMPLETED


def test_a_rejection_reason_reaches_the_agents_model_and_nothing_is_refunded(lg, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "I will not."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "reject", reason="Refunds over $100 need the invoice")
    advance(run)
    assert lg.refunds() == []
    assert run.status == Run.Status.COMPLETED
    last_request = model.requests()[-1]["messages"]
    assert any("Refunds over $100 need the invoice" in str(m.get("content")) for m in last_request)


def test_two_interrupts_decided_by_two_reviewers_resume_once_when_the_last_is_decided(
    lg, model, requester, reviewer, reviewer2
):
    two = [refund_call(490, call_id="call_a"), refund_call(18, "A-1003", call_id="call_b")]
    run = started(requester, {"content": "", "tool_calls": two}, {"content": "Both handled."}, model=model)
    first, second = run.tool_calls.order_by("pk")
    decide(first, reviewer, "approve")
    advance(run)
    assert run.agui_exchanges.count() == 1 and run.status == Run.Status.WAITING  # one still open: no resume yet
    decide(second, reviewer2, "reject", reason="A-1003 was never delivered")
    advance(run)
    assert [r["order_id"] for r in lg.refunds()] == ["A-1001"]
    assert run.status == Run.Status.COMPLETED
    [resume] = [e.input["resume"] for e in run.agui_exchanges.filter(seq=1)]
    assert {e["interruptId"] for e in resume} == set(
        first.agui_interrupt.exchange.interrupts.values_list("interrupt_id", flat=True)
    )


def test_two_workers_resuming_the_same_decision_send_one_run_agent_input(lg, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Done."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")
    barrier = threading.Barrier(2)

    def worker():
        from django.db import connection

        barrier.wait()
        try:
            advance(Run.objects.get(pk=run.pk))
        finally:
            connection.close()

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert run.agui_exchanges.count() == 2 and Exchange.objects.get(run=run, seq=1).status == Exchange.Status.FINISHED
    assert len(lg.refunds()) == 1
