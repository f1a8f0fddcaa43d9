"""A remote agent asks for a checkpoint: a proposal of kind "checkpoint" whose tool takes a draft; a reviewer
approves, edits or sends it back on the checkpoint's card, and the agent reads the decision as for any call."""

import pytest

from approvals import services
from approvals.models import ToolCall
from tests.reviewing import call_url

pytestmark = pytest.mark.django_db

REPLY_TOOL = {
    "description": "Reply to the customer.",
    "input_schema": {
        "type": "object",
        "properties": {"draft": {"type": "string", "minLength": 1}, "ticket": {"type": "string"}},
        "required": ["draft"],
        "additionalProperties": False,
    },
    "tier": "approval",
    "description_template": "Reply to the customer",
    "key_fields": ["ticket"],
}
CHECKPOINT = {
    "kind": "checkpoint",
    "thread_id": "support-4711",
    "tool": "reply",
    "arguments": {"draft": "Hi Dana, your refund of $49 is on its way.", "ticket": "T-4711"},
    "user_request": "Order A-1001 arrived broken.",
    "facts": {"customer": "Dana Smith"},
    "idempotency_key": "4711-reply-1",
}


def test_a_remote_agent_asks_for_a_checkpoint_and_reads_the_edited_draft(agent, client, reviewer):
    agent.declare("reply", **REPLY_TOOL)
    body = agent.propose(**CHECKPOINT)
    assert (body["kind"], body["status"], body["tool"]) == ("checkpoint", "pending", "reply")
    call = ToolCall.objects.get(pk=body["id"])
    assert call.kind == ToolCall.Kind.CHECKPOINT and call.tool_name == "support-bot.reply"

    client.force_login(reviewer)
    html = client.get(call_url(call)).content.decode()
    assert "Checkpoint:" in html and 'name="arg_draft"' in html and "Dana Smith" in html

    edited = {"draft": "Hi Dana, we refunded the $49 order total.", "ticket": "T-4711"}
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="edit", shown_hash=call.review_hash, arguments=edited
    )
    decided = agent.get(f"/calls/{call.pk}").json()
    assert decided["status"] == "approved" and decided["decision"]["arguments"] == edited
    assert decided["decision"]["execution_key"].startswith("ek_")


def test_a_remote_checkpoint_sent_back_carries_the_guidance(agent, reviewer):
    agent.declare("reply", **REPLY_TOOL)
    call = ToolCall.objects.get(pk=agent.propose(**CHECKPOINT)["id"])
    services.toolcall_respond(
        call_id=call.pk, reviewer=reviewer, shown_hash=call.review_hash, reason="Sent back.", guidance="Say sorry."
    )
    decided = agent.get(f"/calls/{call.pk}").json()
    assert decided["status"] == "rejected" and decided["decision"]["verdict"] == "respond"
    assert decided["decision"]["guidance"] == "Say sorry."


def test_a_checkpoint_needs_a_tool_that_takes_a_draft_and_nothing_is_stored(agent):
    agent.declare()  # the refund tool: no draft
    response = agent.post(
        "/calls", CHECKPOINT | {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 5}}
    )
    assert response.status_code == 422
    assert "must require a string" in response.json()["errors"]["tool"][0]
    assert not ToolCall.objects.exists()


def test_a_plain_call_of_the_draft_tool_is_a_call_and_its_key_stays_its_own(agent):
    agent.declare("reply", **REPLY_TOOL)
    plain = agent.propose(**(CHECKPOINT | {"kind": "call"}))
    assert plain["kind"] == "call" and ToolCall.objects.get(pk=plain["id"]).kind == ToolCall.Kind.CALL
    again = agent.post("/calls", CHECKPOINT)  # the same key, now asking for a checkpoint: another body
    assert again.status_code == 409
