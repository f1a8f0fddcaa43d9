"""What the client hands the model (against tests/client/fakehub.py): a tool's result as JSON, never Python's repr; the
reviewer's reason and guidance both when a call did not run; a reviewer's change to a whole number without ".0"."""

import asyncio
import json

import pytest
from reviewhub_client import AsyncReviewHub, Gate, Store
from reviewhub_client.models import Call, Decision

from . import fakehub

REFUND = {"order_id": "A-1001", "amount": 490.0, "reason": "arrived broken"}


@pytest.fixture
def gate(client, tmp_path) -> Gate:
    return Gate(client, Store(tmp_path / "reviewhub.sqlite3"), "support-4711")


def test_a_tool_that_returns_a_dict_is_handed_to_the_model_and_recorded_as_json(gate, hub):
    call = gate.propose("call_1", "issue_refund", REFUND)
    hub.decide(call.id, "approve")

    output = gate.execute("call_1", lambda **args: {"refunded": args["amount"], "order_id": args["order_id"]})

    assert json.loads(output) == {"refunded": 490.0, "order_id": "A-1001"}
    assert json.loads(hub.calls[call.id]["result"]["output"]) == {"refunded": 490.0, "order_id": "A-1001"}


def test_the_async_client_hands_a_dict_result_on_as_json_too(client, hub):
    call = client.propose(thread_id="t", tool="issue_refund", arguments=REFUND, idempotency_key="t-1")
    hub.decide(call.id, "approve")

    async def refund(**args):
        return {"refunded": args["amount"]}

    async def execute():
        async with AsyncReviewHub(hub.url, fakehub.TOKEN) as async_hub:
            return await async_hub.execute_once(call.id, refund)

    assert json.loads(asyncio.run(execute()).output) == {"refunded": 490.0}


def test_the_model_is_told_a_whole_number_change_without_point_zero(gate, hub):
    call = gate.propose("call_1", "issue_refund", REFUND)
    hub.decide(call.id, "edit", arguments={**REFUND, "amount": 49})

    output = gate.execute("call_1", lambda **args: f"Refunded ${args['amount']}", note_changes=True)

    assert output == "Note: a reviewer changed amount from 490 to 49 before this ran. Refunded $49"


def test_a_call_sent_back_tells_the_model_the_reason_and_the_guidance():
    decision = Decision(verdict="respond", reason="The order total is $49", guidance="Refund $49 instead.")
    message = decision.tool_message()
    assert "The order total is $49." in message and "Refund $49 instead." in message


def test_a_rejection_without_guidance_gives_the_reason():
    decision = Decision(verdict="reject", reason="Too much.")
    assert decision.tool_message() == "Rejected by reviewer: Too much."
    assert decision.why() == "Too much."


def test_langgraph_is_told_the_reason_and_the_guidance_as_a_rejection():
    from reviewhub_client.for_langgraph import to_langchain

    decision = Decision(verdict="respond", reason="The order total is $49.", guidance="Refund $49 instead.")
    call = Call(id=1, tool="issue_refund", status="rejected", decision=decision)
    answer = to_langchain(call)
    assert answer["type"] == "reject"
    assert "The order total is $49." in answer["message"] and "Refund $49 instead." in answer["message"]


def tool_request(arguments: dict):
    from langgraph.prebuilt.tool_node import ToolCallRequest

    tool_call = {"name": "issue_refund", "args": arguments, "id": "call_1", "type": "tool_call"}
    return ToolCallRequest(tool_call=tool_call, tool=None, state={}, runtime=None)


def refund_message(request, ran: list):
    from langchain_core.messages import ToolMessage

    ran.append(request.tool_call["args"])
    return ToolMessage(content=json.dumps({"refunded": request.tool_call["args"]["amount"]}), tool_call_id="call_1")


def test_langgraphs_middleware_runs_the_reviewers_arguments_once_however_often_resumed(gate, hub):
    from reviewhub_client.for_langgraph import ReviewHubMiddleware

    hub.decide(gate.propose("call_1", "issue_refund", REFUND).id, "edit", arguments={**REFUND, "amount": 49})
    ran = []
    middleware = ReviewHubMiddleware(gate)

    first = middleware.wrap_tool_call(tool_request(REFUND), lambda request: refund_message(request, ran))
    again = middleware.wrap_tool_call(tool_request(REFUND), lambda request: refund_message(request, ran))

    assert ran == [{**REFUND, "amount": 49}]
    assert json.loads(first.content) == json.loads(again.content) == {"refunded": 49}
    assert first.tool_call_id == "call_1"


def test_langgraphs_middleware_runs_an_async_tool_through_the_gate_too(gate, hub):
    from reviewhub_client.for_langgraph import ReviewHubMiddleware

    hub.decide(gate.propose("call_1", "issue_refund", REFUND).id, "edit", arguments={**REFUND, "amount": 49})
    ran = []

    async def handler(request):
        return refund_message(request, ran)

    message = asyncio.run(ReviewHubMiddleware(gate).awrap_tool_call(tool_request(REFUND), handler))

    assert ran == [{**REFUND, "amount": 49}] and json.loads(message.content) == {"refunded": 49}


def test_langgraphs_middleware_lets_a_call_nobody_reviewed_run_as_it_is(gate):
    from reviewhub_client.for_langgraph import ReviewHubMiddleware

    ran = []
    ReviewHubMiddleware(gate).wrap_tool_call(tool_request(REFUND), lambda request: refund_message(request, ran))
    assert ran == [REFUND]
