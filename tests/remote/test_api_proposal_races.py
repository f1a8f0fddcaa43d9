"""Proposals of one agent at the same instant: no lock on the agent keeps them apart, the unique constraints do
(remote/services/calls.py, retried_once). Nothing is lost, nothing stored twice, the trail stays one chain."""

import threading

import pytest
from django.db import connections
from django.test import Client

from approvals import audit
from approvals.models import Run, ToolCall
from remote.models import RemoteCall, Thread
from tests.agentapi import PROPOSAL, AgentClient

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("require_postgres")]
AT_ONCE = 8


def proposed_at_once(agent: AgentClient, bodies: list[dict]) -> list[tuple[int, dict]]:
    barrier, answers = threading.Barrier(len(bodies)), []

    def propose(body):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {agent.token}")
        barrier.wait()
        try:
            response = client.post("/api/v1/calls", body, "application/json")
            answers.append((response.status_code, response.json()))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=propose, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


@pytest.fixture
def racing_agent(db):
    agent = AgentClient("racing-bot")
    agent.declare()
    return agent


def test_the_same_proposal_sent_at_once_is_stored_once(racing_agent):
    answers = proposed_at_once(racing_agent, [PROPOSAL] * AT_ONCE)
    assert sorted(status for status, _ in answers) == [200] * (AT_ONCE - 1) + [201]
    assert len({body["id"] for _, body in answers}) == 1
    assert (ToolCall.objects.count(), Run.objects.count(), Thread.objects.count()) == (1, 1, 1)
    assert audit.verify().ok


def test_proposals_opening_one_thread_at_once_share_its_one_run(racing_agent):
    bodies = [PROPOSAL | {"idempotency_key": f"race-{i}"} for i in range(AT_ONCE)]
    answers = proposed_at_once(racing_agent, bodies)
    assert sorted(status for status, _ in answers) == [201] * AT_ONCE
    run = Run.objects.get()
    assert RemoteCall.objects.filter(tool_call__run=run).count() == AT_ONCE and Thread.objects.count() == 1
    assert list(run.messages.values_list("seq", flat=True)) == list(range(AT_ONCE + 1))
    assert run.status == Run.Status.WAITING and audit.verify().ok
