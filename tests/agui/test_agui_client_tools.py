"""An AG-UI agent with no interrupts, reviewed anyway: ReviewHub offers its own tools as client tools
(RunAgentInput.tools) to a Pydantic AI agent served by its own AG-UI adapter (a real process,
examples/agui/pydantic_ai_client_tools.py, with no tools and no ReviewHub code). The agent's run ends with the
call; ReviewHub gates it as it gates its own agent's, runs it once approved (the shop's real refund, exactly once)
and sends the output back as a tool message, which the agent's model reads."""

import json
import socket
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from agents import model_server
from agents.services import run_start
from agui.models import AguiAgent, ClientCall, Exchange
from agui.services import agent_save, run_advance
from agui.sweep import stalled_resume
from approvals.models import Decision, Run, ToolCall
from approvals.tools import registry
from shop.models import Refund

from .aguiagents import REFUND_TOOL, AgentServer, advance, decide, start

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "Order A-1001 arrived broken. Please refund it."
MARKER = "with the tools the client offers you"  # the example agent's instructions


def _free_port(start: int) -> int:
    for port in range(start, 19000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18900-18999")


@pytest.fixture(scope="module")
def model_quoting_the_tool(model_server_instance):
    """The scripted model, which in this module, after the queued replies, answers a request that ends with a tool's
    output by quoting it (so the final answer says what the model read)."""
    model_server._scripts.insert(0, _quote_the_tool)
    yield model_server_instance
    model_server._scripts.remove(_quote_the_tool)


def _quote_the_tool(request: dict):
    messages = request.get("messages") or []
    if MARKER not in json.dumps(messages[:1]) or not messages or messages[-1].get("role") != "tool":
        return None
    return f"Done. The tool said: {messages[-1]['content']}", []


@pytest.fixture(scope="module")
def client_tools_server(model_quoting_the_tool, tmp_path_factory):
    data = tmp_path_factory.mktemp("client_tools")
    server = AgentServer("pydantic_ai_client_tools.py", data, model_quoting_the_tool.url, port=_free_port(18950))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def client_tools_agent(client_tools_server, model, shop, roles):
    return agent_save(
        agent=AguiAgent(
            name="helper", endpoint_url=client_tools_server.url, offered_tools=["issue_refund", "get_order_status"]
        )
    )


def refund(amount=49, call_id="call_refund_1") -> dict:
    return {
        "id": call_id,
        "name": "issue_refund",
        "arguments": {"order_id": "A-1001", "amount": amount, "reason": "broken"},
    }


def started(requester, model, *replies) -> Run:
    return start("helper", requester, model, *replies, request=REQUEST)


def final_answer(run: Run) -> str:
    return run.messages.filter(role="assistant").exclude(content="").order_by("-seq").first().content


def test_the_offered_tools_are_in_the_run_agent_input_and_reach_the_agents_model(client_tools_agent, model, requester):
    run = started(requester, model, {"content": "I cannot help with that."})
    sent = Exchange.objects.get(run=run, seq=0).input["tools"]
    refund_schema = registry.get("issue_refund").openai_spec()["function"]["parameters"]
    assert [t["name"] for t in sent] == ["issue_refund", "get_order_status"]
    assert sent[0]["parameters"] == refund_schema and sent[0]["description"] == registry.get("issue_refund").description
    offered = {t["function"]["name"]: t["function"] for t in model.requests()[0]["tools"]}
    assert set(offered) == {"issue_refund", "get_order_status"}  # the real agent gave them to its model
    schema = offered["issue_refund"]["parameters"]
    assert schema["required"] == refund_schema["required"] and schema["properties"].keys() == {
        "order_id",
        "amount",
        "reason",
    }
    assert run.status == Run.Status.COMPLETED


def test_the_agents_call_waits_in_the_queue_as_reviewhubs_card(client_tools_agent, model, requester, reviewer, client):
    run = started(requester, model, {"content": "Refunding the teapot.", "tool_calls": [refund()]})
    [call] = run.tool_calls.all()
    tool = registry.get("issue_refund")
    args = tool.parse(call.arguments)
    assert call.tool_name == "issue_refund" and call.status == ToolCall.Status.PENDING
    assert call.description == tool.render_description(args) and call.facts == tool.fetch_facts(args)
    assert call.facts["customer"] and call.reasoning == "Refunding the teapot." and call.user_request == REQUEST
    assert ClientCall.objects.filter(tool_call=call, exchange__seq=0).exists()
    assert run.status == Run.Status.WAITING and not Refund.objects.exists()
    client.force_login(reviewer)
    page = client.get(f"/calls/{call.pk}/").content.decode()
    assert call.description in page and call.facts["customer"] in page
    decisions = (f"/calls/{call.pk}/approve/", f"/calls/{call.pk}/?edit=1", f"/calls/{call.pk}/respond/")
    assert all(action in page for action in decisions)  # ReviewHub's tool: all four decisions
    assert call.description in client.get("/").content.decode()  # in the review queue


def test_an_approval_runs_the_refund_once_and_the_agents_model_reads_its_result(
    client_tools_agent, model, requester, reviewer
):
    run = started(requester, model, {"content": "", "tool_calls": [refund()]})
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")
    advance(run)
    call.refresh_from_db()
    [row] = Refund.objects.all()
    assert row.amount == 49 and row.idempotency_key == call.idempotency_key
    assert call.status == ToolCall.Status.EXECUTED and call.output.startswith("Refunded $49.00 on order A-1001")
    said = model.requests()[-1]["messages"][-1]
    assert said["role"] == "tool" and said["tool_call_id"] == "call_refund_1" and said["content"] == call.output
    assert run.status == Run.Status.COMPLETED and final_answer(run) == f"Done. The tool said: {call.output}"
    kinds = list(call.audit_events.values_list("kind", flat=True))
    assert kinds == ["proposed", "decided", "executing", "executed"]


def test_an_edit_runs_the_edited_amount_and_the_model_is_told_what_changed(
    client_tools_agent, model, requester, reviewer
):
    run = started(requester, model, {"content": "", "tool_calls": [refund(49)]})
    [call] = run.tool_calls.all()
    decide(call, reviewer, "edit", arguments={"order_id": "A-1001", "amount": 20, "reason": "broken"})
    advance(run)
    call.refresh_from_db()
    assert [r.amount for r in Refund.objects.all()] == [20]
    assert "amount" in call.output and "Refunded $20.00 on order A-1001" in call.output
    assert model.requests()[-1]["messages"][-1]["content"] == call.output
    assert run.status == Run.Status.COMPLETED and "Refunded $20.00" in final_answer(run)


def test_a_rejection_runs_nothing_and_the_model_reads_the_reason_and_guidance(
    client_tools_agent, model, requester, reviewer
):
    run = started(requester, model, {"content": "", "tool_calls": [refund()]})
    [call] = run.tool_calls.all()
    decide(call, reviewer, "reject", reason="Ask for a photo of the damage first", guidance="Offer a replacement.")
    advance(run)
    call.refresh_from_db()
    assert not Refund.objects.exists() and call.status == ToolCall.Status.REJECTED
    said = model.requests()[-1]["messages"][-1]["content"]
    assert "Ask for a photo of the damage first" in said and "Offer a replacement." in said
    assert run.status == Run.Status.COMPLETED and "Ask for a photo of the damage first" in final_answer(run)


def test_a_read_only_offered_tool_runs_at_once_without_review(client_tools_agent, model, requester):
    lookup = {"id": "call_status_1", "name": "get_order_status", "arguments": {"order_id": "A-1001"}}
    run = started(requester, model, {"content": "", "tool_calls": [lookup]})
    [call] = run.tool_calls.all()
    assert call.status == ToolCall.Status.EXECUTED and not Decision.objects.exists()
    assert json.loads(call.output)["order_id"] == "A-1001" and call.audit_events.filter(kind="auto_run").exists()
    read = model.requests()[-1]["messages"][-1]["content"]  # Pydantic AI hands JSON output on re-encoded
    assert json.loads(read) == json.loads(call.output) and len(model.requests()) == 2
    assert run.status == Run.Status.COMPLETED and final_answer(run) == f"Done. The tool said: {read}"


def test_a_call_the_gate_refuses_runs_nothing_and_the_agents_model_reads_why(client_tools_agent, model, requester):
    run = started(requester, model, {"content": "", "tool_calls": [refund(amount=12.345)]})
    [call] = run.tool_calls.all()
    assert call.status == ToolCall.Status.INVALID and "invalid arguments for issue_refund: amount" in call.output
    assert not Refund.objects.exists() and not Decision.objects.exists()  # nobody was asked
    assert model.requests()[-1]["messages"][-1]["content"] == call.output
    assert run.status == Run.Status.COMPLETED and final_answer(run) == f"Done. The tool said: {call.output}"


def test_a_forbidden_tool_is_never_offered(client_tools_agent, model, requester, admin_client):
    client_tools_agent.offered_tools = [
        "delete_customer",
        "get_order_status",
    ]  # as if stored before; the admin refuses it
    agent_save(agent=client_tools_agent)
    run = started(requester, model, {"content": "Nothing to do."})
    assert [t["name"] for t in Exchange.objects.get(run=run).input["tools"]] == ["get_order_status"]
    page = admin_client.get(f"/admin/agui/aguiagent/{client_tools_agent.pk}/change/").content.decode()
    assert 'value="get_order_status"' in page and 'value="delete_customer"' not in page


def test_the_same_decision_resumed_twice_at_once_sends_one_input_and_refunds_once(
    client_tools_agent, model, requester, reviewer
):
    run = started(requester, model, {"content": "", "tool_calls": [refund()]})
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")
    asked = len(model.requests())
    start = threading.Barrier(2)

    def resume():
        start.wait()
        try:
            while run_advance(run_id=run.pk) is not None:
                pass
        finally:
            from django.db import connection

            connection.close()

    workers = [threading.Thread(target=resume) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    advance(run)
    assert Refund.objects.count() == 1
    assert Exchange.objects.filter(run=run).count() == 2 and len(model.requests()) == asked + 1
    assert run.status == Run.Status.COMPLETED


def test_an_interrupt_and_a_call_of_an_offered_tool_in_one_step_resume_together_once(
    model_server_instance, model, shop, roles, requester, reviewer, tmp_path
):
    """examples/agui/pydantic_ai_refund.py: its own refund tool interrupts; ReviewHub's read-only lookup is offered."""
    own = AgentServer("pydantic_ai_refund.py", tmp_path / "own", model.url, port=_free_port(18970)).start()
    try:
        agent_save(
            agent=AguiAgent(
                name="both",
                endpoint_url=own.url,
                tools={"issue_refund": REFUND_TOOL},
                offered_tools=["get_order_status"],
            )
        )
        lookup = {"id": "call_status_2", "name": "get_order_status", "arguments": {"order_id": "A-1001"}}
        model.script({"content": "", "tool_calls": [refund(call_id="call_refund_2"), lookup]}, {"content": "Done."})
        run = run_start(agent_name="both", request=REQUEST, requested_by=requester)
        advance(run)
        interrupted, looked_up = run.tool_calls.order_by("pk")
        assert interrupted.tool_name == "both.issue_refund" and interrupted.status == ToolCall.Status.PENDING
        assert looked_up.tool_name == "get_order_status" and looked_up.status == ToolCall.Status.EXECUTED
        assert interrupted.message_id == looked_up.message_id  # one step
        decide(interrupted, reviewer, "approve")
        advance(run)
        resumed = Exchange.objects.get(run=run, seq=1).input
        assert [entry["payload"] for entry in resumed["resume"]] == [{"approved": True}]
        assert resumed["messages"][-1] == {
            "id": "result-call_status_2",
            "role": "tool",
            "content": looked_up.output,
            "toolCallId": "call_status_2",
        }
        assert own.refunds() == [{"order_id": "A-1001", "amount": 49.0, "reason": "broken"}]
        assert not Refund.objects.exists()  # the agent's own tool ran there, not ReviewHub's
        assert run.status == Run.Status.COMPLETED and len(model.requests()) == 2
    finally:
        own.stop()


def test_an_approval_whose_resumption_was_lost_is_taken_further_by_the_sweep_once(
    client_tools_agent, model, requester, reviewer, background_inline, settings
):
    run = started(requester, model, {"content": "", "tool_calls": [refund()]})
    [call] = run.tool_calls.all()
    decide(call, reviewer, "approve")  # the tests' resumption seam only records it: as if its task were lost
    settings.REVIEWHUB_AGUI_RESUME = "agui.resume.run_decided"  # the sweep resumes it through the real seam
    assert stalled_resume() == 0  # within the grace time, the resumption may be on its way
    later = timezone.now() + timedelta(seconds=settings.SWEEP_GRACE_SECONDS + 1)
    assert stalled_resume(now=later) == 1
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and Refund.objects.count() == 1
    assert stalled_resume(now=later + timedelta(hours=1)) == 0
    assert run.audit_events.filter(kind="resumed", payload__has_key="agui_sweep").count() == 1
