"""POST /api/v1/calls/{id}/lease: a remote agent's claim is a lease it renews while its tool runs; a lapsed one is
released (a tool declared idempotent) or becomes outcome unknown, which the agent is told at once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import AuditEvent, ToolCall

pytestmark = pytest.mark.django_db


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def approved_call(agent, reviewer, **declared) -> dict:
    agent.declare(**declared)
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    return agent.get(f"/calls/{call.pk}").json()


def key(call: dict) -> dict:
    return {"execution_key": call["decision"]["execution_key"]}


@pytest.fixture
def claimed(agent, reviewer):
    call = approved_call(agent, reviewer)
    claim = agent.post(f"/calls/{call['id']}/claim", key(call)).json()
    assert claim["claimed"] is True and claim["lease_seconds"] > 0
    assert claim["call"]["lease_expires_at"] is not None
    return agent, call


def test_the_claimer_renews_its_lease(claimed):
    agent, call = claimed
    before = ToolCall.objects.get(pk=call["id"]).lease_expires_at

    response = agent.post(f"/calls/{call['id']}/lease", key(call))

    assert response.status_code == 200 and response.json()["status"] == "executing"
    assert ToolCall.objects.get(pk=call["id"]).lease_expires_at > before


def test_another_agent_cannot_renew_it_and_is_told_it_does_not_exist(claimed, other_agent):
    _, call = claimed
    response = other_agent.post(f"/calls/{call['id']}/lease", key(call))
    assert response.status_code == 404


def test_a_lapsed_lease_is_not_renewed_and_the_answer_says_why(claimed):
    agent, call = claimed
    ToolCall.objects.filter(pk=call["id"]).update(lease_expires_at=later(-1))

    response = agent.post(f"/calls/{call['id']}/lease", key(call))

    assert response.status_code == 409
    assert "lapsed" in response.json()["detail"] and "lease" in response.json()["errors"]


def test_a_call_not_claimed_has_no_lease_to_renew(agent, reviewer):
    call = approved_call(agent, reviewer)
    response = agent.post(f"/calls/{call['id']}/lease", key(call))
    assert response.status_code == 409 and "not executing" in response.json()["detail"]


def test_a_lapsed_claim_becomes_outcome_unknown_and_the_agent_may_not_claim_it_again(claimed):
    agent, call = claimed
    assert services.sweep_apply(now=later(60))["unknown"] == 1

    seen = agent.get(f"/calls/{call['id']}").json()
    claim = agent.post(f"/calls/{call['id']}/claim", key(call))
    renew = agent.post(f"/calls/{call['id']}/lease", key(call))

    assert seen["status"] == "outcome_unknown"
    assert claim.status_code == renew.status_code == 409
    assert claim.json()["errors"] == {"status": ["outcome_unknown"]}
    assert AuditEvent.objects.filter(tool_call_id=call["id"], kind="outcome_unknown").count() == 1


def test_a_report_that_comes_after_the_outcome_was_marked_unknown_settles_it_and_says_so_in_the_trail(claimed):
    agent, call = claimed
    services.sweep_apply(now=later(60))

    report = agent.post(f"/calls/{call['id']}/result", key(call) | {"ok": True, "output": "refunded"})
    again = agent.post(f"/calls/{call['id']}/result", key(call) | {"ok": True, "output": "refunded"})

    assert report.status_code == again.status_code == 200
    assert report.json()["status"] == "executed" and report.json()["result"]["output"] == "refunded"
    executed = AuditEvent.objects.get(tool_call_id=call["id"], kind="executed")
    assert "outcome was marked unknown" in executed.payload["late"]
    assert ToolCall.objects.get(pk=call["id"]).status == ToolCall.Status.EXECUTED


def test_a_late_report_with_the_wrong_key_is_refused_and_changes_nothing(claimed):
    agent, call = claimed
    services.sweep_apply(now=later(60))

    report = agent.post(f"/calls/{call['id']}/result", {"execution_key": "x" * 40, "ok": True, "output": "refunded"})

    assert report.status_code == 409 and "execution_key" in report.json()["errors"]
    assert ToolCall.objects.get(pk=call["id"]).status == ToolCall.Status.OUTCOME_UNKNOWN


def test_a_lapsed_claim_on_a_tool_declared_idempotent_is_claimed_again(agent, reviewer):
    call = approved_call(agent, reviewer, idempotent=True)
    assert agent.post(f"/calls/{call['id']}/claim", key(call)).json()["claimed"] is True

    assert services.sweep_apply(now=later(60))["released"] == 1
    again = agent.post(f"/calls/{call['id']}/claim", key(call)).json()

    assert again["claimed"] is True and again["call"]["decision"]["execution_key"] == key(call)["execution_key"]


def test_an_agent_that_claims_a_lapsed_idempotent_call_before_the_sweep_releases_it_in_the_trail_once(agent, reviewer):
    call = approved_call(agent, reviewer, idempotent=True)
    assert agent.post(f"/calls/{call['id']}/claim", key(call)).json()["claimed"] is True
    ToolCall.objects.filter(pk=call["id"]).update(lease_expires_at=later(-1))  # lapsed, no sweep yet

    again = agent.post(f"/calls/{call['id']}/claim", key(call)).json()

    assert again["claimed"] is True
    released = AuditEvent.objects.filter(tool_call_id=call["id"], kind="lease_lapsed")
    assert [event.payload["released"] for event in released] == [True]
    assert services.sweep_apply(now=timezone.now())["released"] == 0  # the sweep finds nothing left to release
    assert AuditEvent.objects.filter(tool_call_id=call["id"], kind="executing").count() == 2


def test_what_a_reviewer_says_it_did_reaches_the_agent_as_the_result(claimed, reviewer):
    agent, call = claimed
    services.sweep_apply(now=later(60))
    services.toolcall_settle(call_id=call["id"], reviewer=reviewer, answer="ran", output="refunded, seen in the bank")

    seen = agent.get(f"/calls/{call['id']}").json()

    assert seen["status"] == "executed"
    assert seen["result"]["ok"] is True and seen["result"]["output"] == "refunded, seen in the bank"


def test_a_tool_declared_idempotent_says_so(agent):
    assert agent.declare(idempotent=True)["idempotent"] is True
    assert agent.get("/tools").json()[0]["idempotent"] is True
