"""The Python client (client/, `reviewhub_client`) against a stand-in of the agent API (tests/client/fakehub.py) and
httpx's MockTransport: what it sends, how it reads answers and errors, and exactly-once execution.
The end-to-end tests with the real server and the three frameworks are in test_frameworks.py."""

import asyncio
import json
import threading
from datetime import UTC, datetime

import httpx2 as httpx
import pytest
from reviewhub_client import (
    ApiError,
    AsyncReviewHub,
    NotApproved,
    ReviewHub,
    ToolFailed,
    WebhookInvalid,
    verify_webhook,
)
from standardwebhooks.webhooks import Webhook

from . import fakehub

REFUND = {"order_id": "A-1001", "amount": 490, "reason": "arrived broken"}


def propose(client, key: str = "t-1") -> int:
    return client.propose(thread_id="t", tool="issue_refund", arguments=REFUND, idempotency_key=key).id


def test_the_same_idempotency_key_proposes_one_call(client, hub):
    first, again = propose(client), propose(client)
    assert first == again and len(hub.calls) == 1


def test_a_declared_tool_comes_back_with_its_version(client):
    tool = client.declare_tool("issue_refund", input_schema=fakehub.SCHEMA, key_fields=["amount"])
    assert tool.version == 2 and tool.key_fields == ["amount"]
    assert [t.name for t in client.tools()] == ["issue_refund"]


def test_a_refused_request_raises_an_api_error_naming_the_field():
    body = {"detail": "A field is wrong.", "errors": {"arguments.amount": ["Input should be a valid number."]}}
    transport = httpx.MockTransport(lambda request: httpx.Response(422, json=body))
    with ReviewHub("http://hub.test", "rh_x", transport=transport) as client:
        with pytest.raises(ApiError) as raised:
            propose(client)
    assert raised.value.status == 422 and raised.value.errors == {
        "arguments.amount": ["Input should be a valid number."]
    }
    assert "arguments.amount" in str(raised.value)


def test_every_request_carries_the_token_and_never_a_cookie():
    seen = []

    def answer(request):
        seen.append(request)
        return httpx.Response(200, json=[])

    with ReviewHub("http://hub.test/", "rh_secret", transport=httpx.MockTransport(answer)) as client:
        client.tools()
    assert seen[0].headers["authorization"] == "Bearer rh_secret" and "cookie" not in seen[0].headers
    assert str(seen[0].url) == "http://hub.test/api/v1/tools"


def test_a_bad_token_is_an_api_error(hub):
    with ReviewHub(hub.url, "rh_wrong") as client, pytest.raises(ApiError) as raised:
        client.tools()
    assert raised.value.status == 401


def test_wait_returns_the_decision_once_a_reviewer_decides(client, hub):
    call_id = propose(client)
    threading.Thread(target=hub.decide, args=(call_id, "edit", {**REFUND, "amount": 49})).start()
    call = client.wait(call_id, timeout=30)
    assert call.decision.verdict == "edit" and call.decision.arguments["amount"] == 49
    assert call.decision.changes[0].field == "amount" and call.decision.execution_key.startswith("ek_")


def test_the_approved_arguments_run_not_the_proposed_ones(client, hub):
    call_id = propose(client)
    hub.decide(call_id, "edit", {**REFUND, "amount": 49})
    ran = []
    execution = client.execute_once(call_id, lambda **args: ran.append(args) or f"Refunded ${args['amount']}")
    assert ran == [{**REFUND, "amount": 49}] and execution.ran and execution.output == "Refunded $49"
    assert hub.calls[call_id]["status"] == "executed"


def test_a_rejected_call_never_runs_its_tool(client, hub):
    call_id = propose(client)
    hub.decide(call_id, "reject", reason="Too much.")
    with pytest.raises(NotApproved):
        client.execute_once(call_id, lambda **args: pytest.fail("the tool ran"))
    assert client.call(call_id).decision.tool_message() == "Rejected by reviewer: Too much."


def test_of_many_threads_executing_one_call_one_runs_the_tool_and_all_get_its_output(client, hub):
    call_id = propose(client)
    hub.decide(call_id, "approve")
    ran, outputs, start = [], [], threading.Barrier(4)

    def refund(**args):
        ran.append(args)
        return "Refunded $490"

    def execute():
        with ReviewHub(hub.url, fakehub.TOKEN) as own:
            start.wait()
            outputs.append(own.execute_once(call_id, refund, poll=0.05))

    threads = [threading.Thread(target=execute) for _ in range(4)]
    [t.start() for t in threads]
    [t.join(30) for t in threads]
    assert len(ran) == 1 and hub.claims == 1
    assert sorted(e.ran for e in outputs) == [False, False, False, True]
    assert {e.output for e in outputs} == {"Refunded $490"}


def test_a_tool_that_fails_is_reported_and_a_later_caller_gets_the_failure(client, hub):
    call_id = propose(client)
    hub.decide(call_id, "approve")

    def broken(**args):
        raise RuntimeError("payment provider down")

    with pytest.raises(RuntimeError):
        client.execute_once(call_id, broken)
    assert hub.calls[call_id]["result"]["ok"] is False
    with pytest.raises(ToolFailed, match="payment provider down"):
        client.execute_once(call_id, lambda **args: pytest.fail("ran twice"))


def test_the_async_client_executes_an_approved_call_once(client, hub):
    call_id = propose(client)
    hub.decide(call_id, "approve")
    ran = []

    async def refund(**args):
        ran.append(args)
        return "done"

    async def both():
        async with AsyncReviewHub(hub.url, fakehub.TOKEN) as one, AsyncReviewHub(hub.url, fakehub.TOKEN) as two:
            await one.wait(call_id, timeout=5)
            return await asyncio.gather(one.execute_once(call_id, refund), two.execute_once(call_id, refund))

    executions = asyncio.run(both())
    assert len(ran) == 1 and {e.output for e in executions} == {"done"}


def webhook(secret: str, call: dict) -> tuple[bytes, dict]:
    body = json.dumps({"type": "call.decided", "timestamp": "2026-12-01T10:00:00Z", "data": call})
    now = datetime.now(UTC)
    signature = Webhook(secret).sign("msg_1", now, body)
    headers = {"Webhook-Id": "msg_1", "Webhook-Timestamp": str(int(now.timestamp())), "Webhook-Signature": signature}
    return body.encode(), headers


def test_a_webhook_signed_with_the_secret_verifies_and_a_tampered_one_does_not(client, hub):
    call = hub.decide(propose(client), "approve")
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body, headers = webhook(secret, call)
    event = verify_webhook(body, headers, secret)
    assert event.type == "call.decided" and event.data.decision.verdict == "approve"
    with pytest.raises(WebhookInvalid):
        verify_webhook(body.replace(b"approve", b"reject!"), headers, secret)
    with pytest.raises(WebhookInvalid):
        verify_webhook(body, headers, "whsec_" + "c2VjcmV0LW9mLXNvbWVvbmUtZWxzZQ==")


def test_reviewhub_decisions_become_langchain_and_pydantic_ai_decisions(client, hub):
    from pydantic_ai import ToolApproved, ToolDenied
    from reviewhub_client.for_langgraph import to_langchain
    from reviewhub_client.for_pydantic_ai import to_pydantic_ai

    edited = client.call(hub.decide(propose(client, "a"), "edit", {**REFUND, "amount": 49})["id"])
    rejected = client.call(hub.decide(propose(client, "b"), "reject", reason="No.")["id"])
    responded = client.call(hub.decide(propose(client, "c"), "respond", reason="Ask for a photo first.")["id"])
    assert to_langchain(edited) == {
        "type": "edit",
        "edited_action": {"name": "issue_refund", "args": {**REFUND, "amount": 49}},
    }
    assert to_langchain(rejected) == {"type": "reject", "message": "No."}
    # Sent back with guidance: the tool did not run, so LangChain reads a rejection, with the guidance.
    assert to_langchain(responded)["type"] == "reject"
    assert "Guidance from the reviewer: Ask for a photo first." in to_langchain(responded)["message"]
    assert to_pydantic_ai(edited) == ToolApproved(override_args={**REFUND, "amount": 49})
    assert to_pydantic_ai(rejected) == ToolDenied("Rejected by reviewer: No.")


def test_a_call_with_a_status_and_fields_this_client_does_not_know_still_reads():
    call = {"id": 7, "tool": "issue_refund", "arguments": REFUND, "status": "undone", "shiny_new_field": [1]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=call))
    with ReviewHub("http://hub.test", "rh_x", transport=transport) as client:
        read = client.call(7)
    assert read.status == "undone" and read.decision is None and not read.pending


def test_a_question_is_sent_with_the_proposal_and_its_answer_read_as_the_tools_output():
    from reviewhub_client.for_langgraph import to_langchain

    question = {"prompt": "Which order?", "schema": {"enum": ["A-1001", "A-1005"]}, "payload": {}}
    sent = []
    decision = {"verdict": "answer", "answer": "A-1005", "reviewer": "alice", "execution_key": None}
    answered = {"id": 8, "tool": "choose_order", "arguments": {}, "status": "executed", "decision": decision}

    def answer(request):
        sent.append(json.loads(request.content or b"{}"))
        return httpx.Response(201, json=answered | {"question": question})

    with ReviewHub("http://hub.test", "rh_x", transport=httpx.MockTransport(answer)) as client:
        call = client.propose(thread_id="t", tool="choose_order", arguments={}, idempotency_key="q", question=question)
    assert sent[0]["question"] == question and call.question == question
    assert call.decision.answer == "A-1005" and not call.decision.approved
    assert call.decision.tool_message() == '{"answer": "A-1005"}'
    assert to_langchain(call) == {"type": "respond", "message": '{"answer": "A-1005"}'}


def test_a_checkpoint_is_proposed_with_its_kind_and_reads_back_as_one():
    sent = []
    held = {"id": 9, "kind": "checkpoint", "tool": "reply", "arguments": {"draft": "Hi"}, "status": "pending"}

    def answer(request):
        sent.append(json.loads(request.content or b"{}"))
        return httpx.Response(201, json=held)

    with ReviewHub("http://hub.test", "rh_x", transport=httpx.MockTransport(answer)) as client:
        call = client.propose(
            thread_id="t", tool="reply", arguments={"draft": "Hi"}, idempotency_key="c", kind="checkpoint"
        )
        plain = client.propose(thread_id="t", tool="reply", arguments={"draft": "Hi"}, idempotency_key="d")
    assert sent[0]["kind"] == "checkpoint" and "kind" not in sent[1]
    assert call.kind == "checkpoint" and call.pending and plain.id == 9
