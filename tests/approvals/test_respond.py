"""Reject with a reason the model reads as the tool's output; respond with guidance
that the model reads after every output of the step, and acts on."""

import pytest

from approvals.models import Decision, Run, ToolCall
from shop.models import Refund
from tests.reviewing import advance, approve_reply, pending_call, post, script_calls

pytestmark = pytest.mark.django_db


def assert_valid_openai_order(messages: list[dict]) -> None:
    """Each assistant message with tool calls is followed by one tool message per call, before anything else."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "assistant" and message.get("tool_calls"):
            wanted = {c["id"] for c in message["tool_calls"]}
            answered = [m["tool_call_id"] for m in messages[i + 1 : i + 1 + len(wanted)] if m["role"] == "tool"]
            assert sorted(answered) == sorted(wanted), f"tool outputs missing after message {i}"
            i += len(wanted)
        i += 1


def test_a_reject_needs_a_reason(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    response = post(client, call, "reject", reason="  ")
    assert response.status_code == 400
    assert "A reason is required to reject" in response.content.decode()
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING


def test_the_model_receives_the_reject_reason_as_the_tool_output(make_run, client, reviewer, model):
    call = pending_call(make_run)
    client.force_login(reviewer)
    assert post(client, call, "reject", reason="The customer already got a replacement").status_code == 302
    advance(call)
    sent = model.requests()[-1]["messages"]
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": call.call_id,
        "content": "Rejected by reviewer: The customer already got a replacement",
    }
    assert not Refund.objects.exists()


def test_respond_needs_guidance(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    response = post(client, call, "respond", reason="Too much", guidance="")
    assert response.status_code == 400
    assert "Write what the agent should do instead" in response.content.decode()
    assert not Decision.objects.exists()


def test_guidance_reaches_the_model_after_every_tool_output_of_the_step(make_run, client, reviewer, model):
    script_calls(
        model,
        ("issue_refund", {"order_id": "A-1001", "amount": 40, "reason": "Item arrived damaged"}),
        ("send_email", {"to": "dana.smith@example.com", "subject": "Your refund", "body": "We refunded $40."}),
    )
    run = make_run("Order A-1001 arrived broken. Refund it and tell Dana.")
    refund, email = run.tool_calls.order_by("call_id")
    client.force_login(reviewer)
    post(
        client,
        refund,
        "respond",
        reason="The teapot is $41.50; only shipping is ours to refund",
        guidance="refund only the shipping, $7.50",
    )
    # The step still waits for the email: no guidance yet, the model is not called.
    assert run.messages.last().role == "tool"
    requests_before = len(model.requests())
    advance(refund)
    assert len(model.requests()) == requests_before
    post(client, email, "approve")
    advance(email)
    sent = model.requests()[requests_before]["messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "tool", "user"]
    assert sent[-1]["content"] == "Guidance from reviewer alice: refund only the shipping, $7.50"
    assert sent[-3]["content"].startswith("Rejected by reviewer: The teapot is $41.50")
    assert "The reviewer's guidance follows." in sent[-3]["content"]
    for request in model.requests():
        assert_valid_openai_order(request["messages"])


def test_the_demo_model_acts_on_the_guidance(make_run, client, reviewer, model):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "respond", reason="Only the shipping is refundable", guidance="refund only the shipping, $7.50")
    advance(call)
    run = approve_reply(Run.objects.get(pk=call.run_id), reviewer)
    assert run.status == Run.Status.COMPLETED
    follow_up = run.tool_calls.exclude(pk=call.pk).exclude(kind=ToolCall.Kind.CHECKPOINT).get()
    assert follow_up.tool_name == "issue_refund"
    assert follow_up.arguments == {"order_id": "A-1001", "amount": 7.5, "reason": "Item arrived damaged"}
    assert follow_up.status == ToolCall.Status.EXECUTED  # $7.50 is within the "at most $20" rule
    assert [str(r.amount) for r in Refund.objects.all()] == ["7.50"]
    assert Decision.objects.get(tool_call=call).guidance == "refund only the shipping, $7.50"


def test_guidance_is_given_once(make_run, client, reviewer, model):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "respond", reason="No", guidance="refund only the shipping, $7.50")
    advance(call)
    advance(call)
    run = Run.objects.get(pk=call.run_id)
    assert run.messages.filter(role="user", content__startswith="Guidance from reviewer").count() == 1
