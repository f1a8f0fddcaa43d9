"""An approved remote call is executed by its agent: claimed once with the execution key, reported once."""

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connections
from django.test import Client
from django.utils import timezone

from approvals import services
from approvals.models import AuditEvent, ToolCall
from tests.agentapi import AgentClient
from tests.support import resumed


@pytest.fixture
def approved_remote(refund_agent, reviewer):
    """A call alice approved: (the agent, the call as the agent sees it)."""
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    return refund_agent, refund_agent.get(f"/calls/{call.pk}").json()


def key(call: dict) -> str:
    return call["decision"]["execution_key"]


def test_a_decision_on_a_remote_run_never_resumes_the_local_loop(approved_remote):
    _, call = approved_remote
    assert resumed == []  # tests record what the local seam is asked to do


def test_the_local_worker_never_executes_a_remote_call(approved_remote):
    _, call = approved_remote
    row = ToolCall.objects.select_related("run").get(pk=call["id"])

    assert services.toolcall_execute(call=row) is False
    assert ToolCall.objects.get(pk=row.pk).status == "approved"


def test_the_first_claim_wins_and_the_next_gets_the_recorded_state(approved_remote):
    agent, call = approved_remote
    first = agent.post(f"/calls/{call['id']}/claim", {"execution_key": key(call)})
    second = agent.post(f"/calls/{call['id']}/claim", {"execution_key": key(call)})

    assert first.status_code == second.status_code == 200
    assert first.json()["claimed"] is True and second.json()["claimed"] is False
    assert second.json()["call"]["status"] == "executing"
    assert AuditEvent.objects.filter(tool_call_id=call["id"], kind="executing").count() == 1


def test_a_claim_with_the_wrong_key_is_a_conflict(approved_remote):
    agent, call = approved_remote
    response = agent.post(f"/calls/{call['id']}/claim", {"execution_key": "ek_" + "0" * 40})
    assert response.status_code == 409
    assert ToolCall.objects.get(pk=call["id"]).status == "approved"


def test_a_claim_of_a_pending_call_is_a_conflict(refund_agent):
    call = refund_agent.propose()
    response = refund_agent.post(f"/calls/{call['id']}/claim", {"execution_key": "ek_x"})
    assert response.status_code == 409


def test_a_report_is_recorded_in_the_trail_and_shown_on_the_run_page(approved_remote, reviewer):
    agent, call = approved_remote
    agent.post(f"/calls/{call['id']}/claim", {"execution_key": key(call)})

    response = agent.post(f"/calls/{call['id']}/result", {"execution_key": key(call), "ok": True, "output": "Refunded"})

    body = response.json()
    assert response.status_code == 200 and body["status"] == "executed"
    assert body["result"]["ok"] is True and body["result"]["output"] == "Refunded"
    event = AuditEvent.objects.get(tool_call_id=call["id"], kind="executed")
    assert event.payload["reported_by"] == "support-bot" and event.payload["output"] == "Refunded"
    client = Client()
    client.force_login(reviewer)
    run_id = ToolCall.objects.get(pk=call["id"]).run_id
    assert "Refunded" in client.get(f"/runs/{run_id}/").content.decode()


def test_the_same_report_again_is_answered_the_same(approved_remote):
    agent, call = approved_remote
    report = {"execution_key": key(call), "ok": True, "output": "Refunded"}
    first = agent.post(f"/calls/{call['id']}/result", report)
    again = agent.post(f"/calls/{call['id']}/result", report)

    assert again.status_code == 200 and again.json() == first.json()
    assert AuditEvent.objects.filter(tool_call_id=call["id"], kind="executed").count() == 1


def test_a_different_report_after_one_is_a_conflict(approved_remote):
    agent, call = approved_remote
    agent.post(f"/calls/{call['id']}/result", {"execution_key": key(call), "ok": True, "output": "Refunded"})

    response = agent.post(f"/calls/{call['id']}/result", {"execution_key": key(call), "ok": False, "output": "Oops"})

    assert response.status_code == 409
    assert ToolCall.objects.get(pk=call["id"]).status == "executed"


def test_a_report_for_a_call_that_was_not_approved_is_refused(refund_agent, reviewer):
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.review_hash, reason="No"
    )

    response = refund_agent.post(f"/calls/{call.pk}/result", {"execution_key": "ek_x", "ok": True, "output": "Done"})

    assert response.status_code == 409
    assert not AuditEvent.objects.filter(tool_call=call, kind="executed").exists()


def test_a_call_approved_but_never_reported_is_flagged_after_the_time_limit(approved_remote, settings):
    settings.REMOTE_REPORT_SECONDS = 600
    _, call = approved_remote

    services.sweep_apply(now=timezone.now() + timedelta(seconds=300))
    assert not AuditEvent.objects.filter(kind="unreported").exists()
    services.sweep_apply(now=timezone.now() + timedelta(seconds=700))
    services.sweep_apply(now=timezone.now() + timedelta(seconds=800))

    assert AuditEvent.objects.filter(tool_call_id=call["id"], kind="unreported").count() == 1
    assert resumed == []  # flagged, never resumed: its agent executes it


@pytest.mark.django_db(transaction=True)
def test_of_many_simultaneous_claims_exactly_one_wins(require_postgres, roles, django_user_model):
    agent = AgentClient("racer")
    agent.declare()
    reviewer = django_user_model.objects.create_user("alice")
    reviewer.groups.add(*Group.objects.filter(name="reviewers"))
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    execution_key = agent.get(f"/calls/{call.pk}").json()["decision"]["execution_key"]
    barrier, results = threading.Barrier(12), []

    def claim():
        client = Client(HTTP_AUTHORIZATION=f"Bearer {agent.token}")
        barrier.wait()
        try:
            response = client.post(
                f"/api/v1/calls/{call.pk}/claim", {"execution_key": execution_key}, "application/json"
            )
            results.append(response.json()["claimed"])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sorted(results) == [False] * 11 + [True]
    assert AuditEvent.objects.filter(tool_call=call, kind="executing").count() == 1


def test_the_run_page_shows_a_call_flagged_as_never_reported(approved_remote, reviewer, settings):
    settings.REMOTE_REPORT_SECONDS = 600
    _, call = approved_remote
    services.sweep_apply(now=timezone.now() + timedelta(seconds=700))
    client = Client()
    client.force_login(reviewer)

    page = client.get(f"/runs/{ToolCall.objects.get(pk=call['id']).run_id}/").content.decode()

    assert "the agent has not reported a result in time" in page
