"""A remote agent asks, through the agent API, for a model turn to be reviewed before its model answers:
the turn is held like ReviewHub's own (the queue, the card, groups, one decision bound to the transcript's
hash), and the agent reads the decision — continue, a note, or the reviewer's reply — by long-poll or webhook."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import AuditEvent, Run, ToolCall, TurnRule

pytestmark = pytest.mark.django_db

MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "I will file a chargeback unless you refund $1,500 on order A-1004."},
]
TURN = {
    "thread_id": "support-4711",
    "step": 1,
    "messages": MESSAGES,
    "transcript_sha256": args_hash(MESSAGES),
    "user_request": MESSAGES[1]["content"],
    "idempotency_key": "4711-turn-1",
}


def test_a_turn_request_is_held_for_review_bound_to_the_transcripts_hash(agent):
    response = agent.post("/turns", TURN)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "turn" and body["status"] == "pending" and body["tool"] == "model turn"
    call = ToolCall.objects.get(pk=body["id"])
    assert call.kind == ToolCall.Kind.TURN and call.run.advanced_by == Run.AdvancedBy.REMOTE
    assert call.arguments == {"step": 1, "transcript_sha256": TURN["transcript_sha256"]}
    assert call.user_request == TURN["user_request"]
    assert AuditEvent.objects.filter(tool_call=call, kind="proposed").exists()


def test_the_same_key_returns_the_same_turn_and_another_body_is_a_conflict(agent):
    first = agent.post("/turns", TURN)
    again = agent.post("/turns", TURN)
    assert (first.status_code, again.status_code) == (201, 200) and again.json()["id"] == first.json()["id"]
    assert agent.post("/turns", TURN | {"step": 2}).status_code == 409


def test_a_hash_that_is_not_the_transcripts_is_refused_and_nothing_is_stored(agent):
    response = agent.post("/turns", TURN | {"transcript_sha256": "0" * 64})
    assert response.status_code == 422 and "transcript_sha256" in response.json()["errors"]
    bad = agent.post("/turns", TURN | {"messages": [{"role": "wizard", "content": "hi"}]})
    assert bad.status_code == 422 and "messages.0" in bad.json()["errors"]
    assert not ToolCall.objects.exists()


def test_the_card_shows_the_transcript_the_agent_sent(agent, client, reviewer):
    call_id = agent.post("/turns", TURN).json()["id"]
    client.force_login(reviewer)
    html = client.get(reverse("approvals:call", args=[call_id])).content.decode()
    assert "I will file a chargeback" in html and "Send this reply" in html


def test_the_turn_rules_say_who_decides_a_remote_turn(agent, reviewer, senior):
    TurnRule.objects.create(name="Chargebacks", words="chargeback", group=Group.objects.get(name="senior"))
    call = ToolCall.objects.get(pk=agent.post("/turns", TURN).json()["id"])
    assert call.review_group.name == "senior"
    with pytest.raises(services.NotAllowed):
        services.turn_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)


@pytest.mark.parametrize("verdict,text", [("approve", ""), ("note", "Offer $15."), ("reply", "A colleague will call.")])
def test_the_agent_reads_the_decision_with_its_text(agent, reviewer, verdict, text):
    call = ToolCall.objects.get(pk=agent.post("/turns", TURN).json()["id"])
    services.turn_decide(call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, text=text)
    body = agent.get(f"/calls/{call.pk}").json()
    assert body["status"] == "approved"
    assert body["decision"]["verdict"] == verdict and body["decision"]["guidance"] == text
    assert body["decision"]["reviewer"] == "alice" and body["decision"]["execution_key"] is None


def test_an_expired_turn_is_expired_for_the_agent_and_never_flagged_unreported(agent):
    from datetime import timedelta

    from django.utils import timezone

    call = ToolCall.objects.get(pk=agent.post("/turns", TURN).json()["id"])
    services.toolcall_expire(call_id=call.pk, now=timezone.now() + timedelta(days=2))
    body = agent.get(f"/calls/{call.pk}").json()
    assert body["status"] == "expired" and body["decision"]["verdict"] == "expire"
    call.run.refresh_from_db()
    assert call.run.status != "failed"  # the run is the agent's; it was told


def test_another_agent_cannot_see_the_turn(agent, other_agent):
    call_id = agent.post("/turns", TURN).json()["id"]
    assert other_agent.get(f"/calls/{call_id}").status_code == 404


def test_a_decided_turn_is_neither_claimed_nor_reported(agent, reviewer):
    call = ToolCall.objects.get(pk=agent.post("/turns", TURN).json()["id"])
    services.turn_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    for path, body in (("claim", {"execution_key": "ek_x"}), ("result", {"execution_key": "ek_x", "ok": True})):
        response = agent.post(f"/calls/{call.pk}/{path}", body)
        assert response.status_code == 409 and "nothing to execute" in response.json()["detail"]


def test_the_agents_webhook_hears_of_a_decided_turn(agent, reviewer, django_capture_on_commit_callbacks, monkeypatch):
    from remote import tasks
    from remote.models import Webhook, WebhookDelivery

    scheduled = []
    monkeypatch.setattr(tasks, "schedule_delivery", lambda pk, countdown: scheduled.append(pk))  # no real sending
    Webhook.objects.create(agent=agent.agent, url="https://agent.example.com/hook", secret="whsec_" + "A" * 32)
    call = ToolCall.objects.get(pk=agent.post("/turns", TURN).json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        services.turn_decide(
            call_id=call.pk, reviewer=reviewer, verdict="reply", shown_hash=call.review_hash, text="Hi"
        )
    delivery = WebhookDelivery.objects.get(tool_call=call)
    assert scheduled == [delivery.pk]
    data = delivery.payload["data"]
    assert data["kind"] == "turn" and data["decision"]["verdict"] == "reply" and data["decision"]["guidance"] == "Hi"
