"""Slack: new calls posted to their group's channel, buttons verified with the signing secret and bound
to the call and its arguments hash, the message rewritten when anyone decides anywhere. Slack's Web
API is a local stand-in (tests/ops/slack_standin.py): no test needs the internet."""

import json
import time
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group

from approvals import services
from approvals.models import PolicyRule, ToolCall, ToolSetting
from ops.models import SlackChannel, SlackDecision, SlackIdentity, SlackMessage
from tests.reviewing import REFUND_CALL, decide, propose

from .slack_standin import URL, press, press_body, proposed, signed

pytestmark = pytest.mark.django_db


def buttons(arguments: dict) -> list[str]:
    blocks = json.loads(arguments["blocks"]) if isinstance(arguments["blocks"], str) else arguments["blocks"]
    return [element["action_id"] for block in blocks if block["type"] == "actions" for element in block["elements"]]


def texts(arguments: dict) -> str:
    return json.dumps(arguments["blocks"])


def test_a_new_call_is_posted_with_its_description_key_facts_and_buttons(
    slack, chat_refunds, run, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    posted = slack.last("chat.postMessage")
    assert posted["channel"] == "C-REVIEW"
    assert call.description in texts(posted) and "amount: $45.00" in texts(posted)
    assert buttons(posted) == ["approve", "reject", "open"]
    assert f"https://reviewhub.example.com/calls/{call.pk}/" in texts(posted)
    assert SlackMessage.objects.get(tool_call=call).ts


def test_a_tool_that_does_not_allow_chat_decisions_gets_only_a_link(slack, run, django_capture_on_commit_callbacks):
    proposed(run, django_capture_on_commit_callbacks)
    assert buttons(slack.last("chat.postMessage")) == ["open"]


def test_a_call_that_needs_two_approvals_gets_only_a_link(
    slack, chat_refunds, run, alice_in_slack, client, django_capture_on_commit_callbacks
):
    PolicyRule.objects.create(name="Two", tool_name="issue_refund", outcome="review", required_approvals=2)
    call = proposed(run, django_capture_on_commit_callbacks)
    assert buttons(slack.last("chat.postMessage")) == ["open"]
    assert press(client, django_capture_on_commit_callbacks, press_body(call)).status_code == 200
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING and not call.decisions.exists()
    assert "closer look" in slack.last("chat.postEphemeral")["text"]


def test_a_correctly_signed_approve_decides_as_the_linked_reviewer_and_rewrites_the_message(
    slack, chat_refunds, run, alice_in_slack, client, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    response = press(client, django_capture_on_commit_callbacks, press_body(call))
    assert response.status_code == 200
    call.refresh_from_db()
    decision = call.final_decision()
    assert call.status == ToolCall.Status.APPROVED and decision.reviewer == alice_in_slack
    assert decision.arguments_hash == call.arguments_hash
    assert SlackDecision.objects.get(decision=decision).slack_user_id == "U-ALICE"
    updated = slack.last("chat.update")
    assert "Approved by alice in Slack" in texts(updated) and buttons(updated) == ["open"]


def test_a_reject_from_slack_says_who_rejected_it_where(
    slack, chat_refunds, run, alice_in_slack, client, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call, "reject"))
    call.refresh_from_db()
    assert call.status == ToolCall.Status.REJECTED
    assert call.final_decision().reason == "rejected by alice in Slack"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(lambda body: signed(body, secret="another-app's-secret"), id="another secret"),
        pytest.param(lambda body: signed(body, timestamp=int(time.time()) - 3600), id="an hour old"),
        pytest.param(lambda body: signed(body + "&extra=1"), id="another body"),
        pytest.param(lambda body: {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00"}, id="garbage"),
        pytest.param(lambda body: {}, id="unsigned"),
    ],
)
def test_a_request_without_a_valid_signature_is_refused_and_changes_nothing(
    headers, slack, chat_refunds, run, alice_in_slack, client, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    body = press_body(call)
    response = client.post(URL, body, content_type="application/x-www-form-urlencoded", headers=headers(body))
    assert response.status_code == 401
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING and not call.decisions.exists()


def test_a_signed_request_that_is_not_a_button_press_is_a_400(slack, client):
    body = urlencode({"payload": "{not json"})
    response = client.post(URL, body, content_type="application/x-www-form-urlencoded", headers=signed(body))
    assert response.status_code == 400


def test_a_press_bound_to_other_arguments_decides_nothing(
    slack, chat_refunds, run, alice_in_slack, client, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call, shown_hash="0" * 64))
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING and not call.decisions.exists()
    assert "changed since you opened it" in slack.last("chat.postEphemeral")["text"]


def test_a_slack_user_not_linked_to_a_reviewer_decides_nothing(
    slack, chat_refunds, run, client, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call, user="U-STRANGER"))
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert slack.last("chat.postEphemeral")["user"] == "U-STRANGER"


def test_the_requester_of_the_run_cannot_approve_from_slack_either(
    slack, chat_refunds, run, requester, client, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(user=requester, slack_user_id="U-RITA")
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call, user="U-RITA"))
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert "You requested this run" in slack.last("chat.postEphemeral")["text"]


def test_a_second_press_gets_already_decided(
    slack, chat_refunds, run, alice_in_slack, reviewer2, client, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(user=reviewer2, slack_user_id="U-BOB")
    call = proposed(run, django_capture_on_commit_callbacks)
    press(client, django_capture_on_commit_callbacks, press_body(call))
    press(client, django_capture_on_commit_callbacks, press_body(call, "reject", user="U-BOB"))
    call.refresh_from_db()
    assert call.status == ToolCall.Status.APPROVED and call.decisions.count() == 1
    assert "alice" in slack.last("chat.postEphemeral")["text"]


def test_a_decision_in_reviewhub_rewrites_the_message(
    slack, chat_refunds, run, reviewer2, django_capture_on_commit_callbacks
):
    call = proposed(run, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        decide(call, reviewer2, "reject", reason="Wrong order.")
    updated = slack.last("chat.update")
    assert updated["ts"] == SlackMessage.objects.get(tool_call=call).ts
    assert "Rejected by bob in ReviewHub: Wrong order." in texts(updated) and buttons(updated) == ["open"]


def test_a_group_without_a_channel_posts_nothing(slack, run, django_capture_on_commit_callbacks, roles):
    SlackChannel.objects.all().delete()
    SlackChannel.objects.create(group=Group.objects.get(name="senior"), channel_id="C-SENIOR")
    proposed(run, django_capture_on_commit_callbacks)
    assert "chat.postMessage" not in slack.methods()


def test_nothing_is_posted_inside_the_transaction(slack, run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        propose(run, *REFUND_CALL)
        assert slack.calls == []
    assert callbacks and slack.calls == []  # only once the commit runs them


def test_a_slack_error_is_logged_and_the_call_still_waits(slack, run, django_capture_on_commit_callbacks):
    slack.errors["chat.postMessage"] = "channel_not_found"
    call = proposed(run, django_capture_on_commit_callbacks)
    assert call.status == ToolCall.Status.PENDING and not SlackMessage.objects.exists()


def test_an_escalated_call_is_posted_to_the_new_groups_channel_and_the_old_post_keeps_only_the_link(
    slack, chat_refunds, run, roles, django_capture_on_commit_callbacks
):
    seniors = Group.objects.get(name="senior")
    ToolSetting.objects.create(tool_name="issue_refund", on_expiry="escalate", escalate_to=seniors)
    SlackChannel.objects.create(group=seniors, channel_id="C-SENIOR")
    call = proposed(run, django_capture_on_commit_callbacks)
    assert buttons(slack.last("chat.postMessage")) == ["approve", "reject", "open"]
    with django_capture_on_commit_callbacks(execute=True):
        services.toolcall_expire(call_id=call.pk, now=call.expires_at + timedelta(seconds=1))
    assert slack.last("chat.postMessage")["channel"] == "C-SENIOR"
    assert buttons(slack.last("chat.postMessage")) == ["open"]  # an escalated call is decided in ReviewHub
    updated = slack.last("chat.update")
    assert updated["channel"] == "C-REVIEW" and buttons(updated) == ["open"]


def test_text_from_the_model_cannot_mention_anyone_or_link_in_slack(slack, run, django_capture_on_commit_callbacks):
    arguments = {"to": "dana.smith@example.com", "subject": "<!channel> <https://evil.example|bank>", "body": "Hi"}
    with django_capture_on_commit_callbacks(execute=True):
        call = propose(run, "send_email", arguments)
    posted = slack.last("chat.postMessage")
    assert "<!channel>" not in posted["text"] and "<https://" not in posted["text"]
    blocks = json.loads(posted["blocks"]) if isinstance(posted["blocks"], str) else posted["blocks"]
    shown = [block for block in blocks if block["type"] == "section" and "text" in block]
    assert all(block["text"]["type"] == "plain_text" for block in shown)  # Slack renders no markup there
    assert "&lt;!channel&gt;" in posted["text"] and "<!channel>" in call.description
