"""A remote agent's tool asks a person through the agent API: the call waits as a question, the reviewer's
answer comes back in the decision, and the agent never gets an execution key for it."""

import pytest
from django.urls import reverse

from approvals import services
from approvals.models import AuditEvent, ToolCall
from tests.agentapi import PROPOSAL

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"order_id": {"enum": ["A-1001", "A-1005"]}}, "required": ["order_id"]}
QUESTION = {"prompt": "Which order?", "schema": SCHEMA, "payload": {"rows": [{"order": "A-1001"}, {"order": "A-1005"}]}}
LOOKUP_TOOL = {
    "input_schema": {"type": "object", "properties": {"email": {"type": "string"}}},
    "tier": "read_only",
    "key_fields": ["email"],
    "description_template": "Which order of {email}",
}


def ask(agent, **changes):
    agent.declare("choose_order", **LOOKUP_TOOL)
    body = PROPOSAL | {"tool": "choose_order", "arguments": {"email": "dana@example.com"}, "question": QUESTION}
    return agent.post("/calls", body | changes)


def test_a_proposal_with_a_question_waits_as_one_whatever_the_tools_tier(agent):
    response = ask(agent)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending" and body["decision"] is None and body["question"] == QUESTION
    call = ToolCall.objects.get(pk=body["id"])
    assert call.kind == ToolCall.Kind.QUESTION and call.expires_at is not None
    assert AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.PROPOSED).exists()


def test_the_answer_comes_back_in_the_decision_without_an_execution_key(agent, reviewer):
    call = ToolCall.objects.get(pk=ask(agent).json()["id"])
    services.toolcall_answer(
        call_id=call.pk, reviewer=reviewer, shown_hash=call.review_hash, answer={"order_id": "A-1005"}
    )
    decision = agent.get(f"/calls/{call.pk}").json()["decision"]
    assert decision["verdict"] == "answer" and decision["answer"] == {"order_id": "A-1005"}
    assert decision["execution_key"] is None and decision["arguments"] is None


def test_a_question_nobody_could_answer_is_refused_and_nothing_is_stored(agent):
    response = ask(agent, question=QUESTION | {"schema": {"type": "no such type"}})
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["question"]
    assert not ToolCall.objects.exists()


def test_the_card_shows_the_agents_payload_as_the_agents(agent, reviewer, client):
    call = ToolCall.objects.get(pk=ask(agent).json()["id"])
    client.force_login(reviewer)
    page = client.get(reverse("approvals:call", args=[call.pk])).text
    assert "from the agent's code, not checked by ReviewHub" in page
    assert 'name="answer_order_id" value="A-1005"' in page
