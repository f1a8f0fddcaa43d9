"""Every decision's trail record holds what the reviewer was shown and how they chose: the options offered,
the warnings shown, the time from opening the card to deciding, and the channel (button, key, batch, Slack, API)."""

import pytest

from approvals import services
from approvals.models import AuditEvent, ToolCall
from tests.ops.slack_standin import press, press_body, proposed
from tests.reviewing import REFUND_CALL, propose

pytestmark = pytest.mark.django_db


def shown(call: ToolCall) -> dict:
    return AuditEvent.objects.get(tool_call=call, kind=AuditEvent.Kind.DECIDED).payload["shown"]


def test_a_button_decision_records_options_warnings_time_from_opening_and_channel(run, reviewer, client):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 490, "reason": "Broken"})
    services.toolcall_review_start(call_id=call.pk, reviewer=reviewer)
    client.force_login(reviewer)

    client.post(f"/calls/{call.pk}/approve/", {"arguments_hash": call.review_hash, "approve_anyway": "1"})

    record = shown(call)
    assert record["options_offered"] == ["approve", "edit", "reject", "respond"]
    assert record["warnings_shown"] == ["The refund is more than the $49.00 still refundable on this order."]
    assert record["channel"] == "button"
    assert 0 <= record["seconds_from_open"] < 600


def test_a_decision_sent_from_the_keyboard_says_so(run, reviewer, client):
    call = propose(run, *REFUND_CALL)
    client.force_login(reviewer)

    client.post(f"/calls/{call.pk}/reject/", {"arguments_hash": call.review_hash, "reason": "no", "via": "key"})

    assert shown(call)["channel"] == "key" and shown(call)["warnings_shown"] == []


def test_a_decision_never_opened_has_no_time_and_a_batch_says_batch(run, reviewer, client):
    call = propose(run, *REFUND_CALL)
    client.force_login(reviewer)

    client.post("/approve-selected/", {"calls": [f"{call.pk}:{call.review_hash}"]})

    assert shown(call)["channel"] == "batch" and shown(call)["seconds_from_open"] is None


def test_a_service_call_is_recorded_as_the_api_and_an_unknown_channel_as_well(run, reviewer, reviewer2):
    first = propose(run, *REFUND_CALL)
    second = propose(run, *REFUND_CALL, call_id="call_2")
    services.toolcall_decide(call_id=first.pk, reviewer=reviewer, verdict="approve", shown_hash=first.review_hash)
    services.toolcall_decide(
        call_id=second.pk, reviewer=reviewer2, verdict="approve", shown_hash=second.review_hash, channel="<script>"
    )

    assert shown(first)["channel"] == shown(second)["channel"] == "api"


@pytest.mark.usefixtures("slack", "chat_refunds", "alice_in_slack")
def test_a_decision_from_slack_says_slack(run, client, django_capture_on_commit_callbacks):
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call))

    assert shown(call)["channel"] == "slack"
