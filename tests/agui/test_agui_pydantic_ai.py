"""A Pydantic AI agent served by its own AG-UI adapter (a real process, examples/agui/pydantic_ai_refund.py):
its approval-required tool ends the run with an interrupt; ReviewHub's decision resumes it. The agent keeps
no state, so the thread's messages go back with the resume. Its server down at decision time: the run says
it retries, fails with the reason after the last attempt, and Retry sends the same resume once it is up."""

import pytest

from agents.services import run_start
from agui.services import run_advance
from approvals import services
from approvals.models import Run, ToolCall

from .aguiagents import REQUEST, AgentServer, advance, decide, declare, refund_call, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def pydantic_server(model_server_instance, tmp_path_factory):
    server = AgentServer("pydantic_ai_refund.py", tmp_path_factory.mktemp("pydantic_ai"), model_server_instance.url)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def pai(pydantic_server, model, roles):
    pydantic_server.forget_refunds()
    declare("refunds-pai", pydantic_server.url)
    return pydantic_server


def started(requester, *replies, model) -> Run:
    return start("refunds-pai", requester, model, *replies)


def test_an_edit_resumes_the_pydantic_ai_agent_with_the_edited_arguments(pai, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Refunded $49."}, model=model)
    [call] = run.tool_calls.all()
    assert call.tool_name == "refunds-pai.issue_refund" and call.status == ToolCall.Status.PENDING
    decide(call, reviewer, "edit", arguments={"order_id": "A-1001", "amount": 49, "reason": "broken"})
    advance(run)
    call.refresh_from_db()
    assert pai.refunds() == [{"order_id": "A-1001", "amount": 49.0, "reason": "broken"}]
    assert call.status == ToolCall.Status.EXECUTED and call.output == "Refunded $49.00 on A-1001."
    assert run.status == Run.Status.COMPLETED


def test_a_rejection_reason_is_what_the_pydantic_ai_agents_model_reads(pai, model, requester, reviewer):
    run = started(requester, {"content": "", "tool_calls": [refund_call()]}, {"content": "Understood."}, model=model)
    [call] = run.tool_calls.all()
    decide(call, reviewer, "reject", reason="Ask for a photo of the damage first")
    advance(run)
    assert pai.refunds() == [] and run.status == Run.Status.COMPLETED
    assert "Ask for a photo of the damage first" in str(model.requests()[-1]["messages"])


def test_the_agent_down_at_decision_time_is_retried_visibly_then_fails_and_retry_resumes_it_once(
    pai, model, requester, reviewer, settings, tmp_path
):
    settings.AGUI_CONNECT_ATTEMPTS = 2
    own = AgentServer("pydantic_ai_refund.py", tmp_path / "own", model.url).start()
    declare("refunds-own", own.url)
    model.script({"content": "", "tool_calls": [refund_call()]}, {"content": "Refunded."})
    run = run_start(agent_name="refunds-own", request=REQUEST, requested_by=requester)
    advance(run)
    [call] = run.tool_calls.all()
    own.stop()
    decide(call, reviewer, "approve")
    assert run_advance(run_id=run.pk) == settings.AGUI_RETRY_SECONDS  # the background task tries again then
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and "cannot be reached (attempt 1 of 2)" in run.last_error
    assert run_advance(run_id=run.pk) is None
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and "could not be reached (2 attempts)" in run.last_error
    own.start()
    try:
        services.run_retry(run=run, user=requester)
        advance(run)
        assert run.status == Run.Status.COMPLETED
        assert own.refunds() == [{"order_id": "A-1001", "amount": 490.0, "reason": "broken"}]
    finally:
        own.stop()
