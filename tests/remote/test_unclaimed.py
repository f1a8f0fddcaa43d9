"""An approved call its agent read and did not claim is flagged, in the trail and on its card: the agent's tool
may run without the gate (remote/unclaimed.py). Claimed in time, or never read, nothing is flagged."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from approvals import services
from approvals.models import AuditEvent, ToolCall
from remote.unclaimed import unclaimed_flag

pytestmark = pytest.mark.django_db


def after_the_wait():
    return timezone.now() + timedelta(seconds=settings.REMOTE_CLAIM_SECONDS + 1)


def approved(agent, reviewer) -> ToolCall:
    agent.declare()
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    return call


def card(user, call: ToolCall) -> str:
    client = Client()
    client.force_login(user)
    return client.get(reverse("approvals:call", args=[call.pk])).content.decode()


def test_an_approval_read_and_not_claimed_is_flagged_once_in_the_trail_and_on_its_card(agent, reviewer):
    call = approved(agent, reviewer)
    assert agent.get(f"/calls/{call.pk}").json()["status"] == "approved"

    flagged, again = unclaimed_flag(now=after_the_wait()), unclaimed_flag(now=after_the_wait())

    assert (flagged, again) == (1, 0)
    event = AuditEvent.objects.get(tool_call=call, kind=AuditEvent.Kind.NOT_CLAIMED)
    assert event.payload["agent"] == agent.agent.name and event.payload["seconds_since_read"] > 0
    assert "Approved, and not claimed." in card(reviewer, call)


def test_a_long_poll_that_returns_the_approval_counts_as_reading_it(agent, reviewer):
    call = approved(agent, reviewer)
    assert agent.get(f"/calls/{call.pk}?wait=1").json()["status"] == "approved"

    assert unclaimed_flag(now=after_the_wait()) == 1


def test_an_approval_claimed_in_time_is_never_flagged_nor_shown(agent, reviewer):
    call = approved(agent, reviewer)
    seen = agent.get(f"/calls/{call.pk}").json()
    assert (
        agent.post(f"/calls/{call.pk}/claim", {"execution_key": seen["decision"]["execution_key"]}).status_code == 200
    )

    assert unclaimed_flag(now=after_the_wait()) == 0
    assert not AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.NOT_CLAIMED).exists()


def test_an_approval_the_agent_never_read_is_not_flagged(agent, reviewer):
    call = approved(agent, reviewer)

    assert unclaimed_flag(now=after_the_wait()) == 0
    assert "Approved, and not claimed." not in card(reviewer, call)


def test_a_flagged_call_claimed_later_no_longer_shows_the_flag(agent, reviewer):
    call = approved(agent, reviewer)
    seen = agent.get(f"/calls/{call.pk}").json()
    unclaimed_flag(now=after_the_wait())

    agent.post(f"/calls/{call.pk}/claim", {"execution_key": seen["decision"]["execution_key"]})

    assert "Approved, and not claimed." not in card(reviewer, call)
    assert AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.NOT_CLAIMED).count() == 1
