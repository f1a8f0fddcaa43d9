"""Claims: opening a call tells the others "being reviewed by X" for a few minutes;
a claim never blocks another allowed reviewer's decision, and it can be released."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import AuditEvent, ToolCall
from tests.reviewing import action_url, call_url, post

pytestmark = pytest.mark.django_db


def test_opening_a_call_page_claims_it_on_load(call, client, reviewer):
    client.force_login(reviewer)
    html = client.get(call_url(call)).content.decode()
    assert 'hx-trigger="load"' in html and f'hx-post="{action_url(call, "claim")}"' in html


def test_a_claimed_call_shows_who_is_reviewing_it_to_the_others(call, client, reviewer, reviewer2):
    client.force_login(reviewer)
    response = post(client, call, "claim", htmx=True)
    assert "You are reviewing this" in response.content.decode()
    call.refresh_from_db()
    assert call.current_reviewer == reviewer
    assert timedelta(minutes=4) < call.reviewing_until - timezone.now() <= timedelta(minutes=5)
    assert AuditEvent.objects.filter(tool_call=call, kind="review_claimed", actor=reviewer).exists()
    client.force_login(reviewer2)
    assert "Being reviewed by <strong>alice</strong>" in client.get("/").content.decode()


def test_a_claim_never_blocks_another_reviewers_decision(call, client, reviewer, reviewer2):
    services.toolcall_review_start(call_id=call.pk, reviewer=reviewer)
    client.force_login(reviewer2)
    assert post(client, call, "approve").status_code == 302
    call.refresh_from_db()
    assert call.status == ToolCall.Status.APPROVED
    assert call.current_reviewer is None


def test_someone_elses_live_claim_is_not_taken_over(call, reviewer, reviewer2):
    assert services.toolcall_review_start(call_id=call.pk, reviewer=reviewer) is True
    assert services.toolcall_review_start(call_id=call.pk, reviewer=reviewer2) is False
    call.refresh_from_db()
    assert call.current_reviewer == reviewer


def test_a_claim_lapses_after_a_few_minutes(call, reviewer, reviewer2):
    services.toolcall_review_start(call_id=call.pk, reviewer=reviewer)
    ToolCall.objects.filter(pk=call.pk).update(reviewing_until=timezone.now() - timedelta(seconds=1))
    call.refresh_from_db()
    assert call.current_reviewer is None
    assert services.toolcall_review_start(call_id=call.pk, reviewer=reviewer2) is True


def test_a_claim_can_be_released(call, client, reviewer):
    client.force_login(reviewer)
    post(client, call, "claim")
    response = post(client, call, "release", htmx=True)
    assert '/claim/"' in response.content.decode()
    call.refresh_from_db()
    assert call.reviewing_by is None
    assert AuditEvent.objects.filter(tool_call=call, kind="review_released").exists()


def test_only_someone_who_may_decide_can_claim(call, client, requester):
    client.force_login(requester)
    response = post(client, call, "claim", htmx=True)
    assert response.status_code == 403
    call.refresh_from_db()
    assert call.reviewing_by is None
