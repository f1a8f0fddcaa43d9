"""Notifications that follow the reviewer: per-user preferences by tool and group, one email per call or
a digest every few minutes, chat mentions; always after the commit."""

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from approvals.models import ToolCall, ToolSetting
from ops import notify, observers
from ops.models import NotificationPreference, SlackChannel, SlackIdentity
from tests.reviewing import NOTE_CALL, REFUND_CALL, propose, run_with

from .slack_standin import SlackStandIn

pytestmark = pytest.mark.django_db
Email = NotificationPreference.Email


@pytest.fixture(autouse=True)
def inline_tasks(background_inline, settings):
    settings.REVIEWHUB_SITE_URL = "https://reviewhub.example.com"


@pytest.fixture
def with_email(reviewer, reviewer2):
    for user in (reviewer, reviewer2):
        user.email = f"{user.username}@shop.example"
        user.save()
    return reviewer, reviewer2


def proposed(run, capture, tool_call=REFUND_CALL, call_id="call_1"):
    with capture(execute=True):
        return propose(run, *tool_call, call_id=call_id)


def recipients() -> list[str]:
    return sorted(address for message in mail.outbox for address in message.to)


def test_without_a_preference_nobody_gets_email(run, with_email, django_capture_on_commit_callbacks):
    proposed(run, django_capture_on_commit_callbacks)
    assert mail.outbox == []


def test_with_nobody_to_email_per_call_and_no_slack_a_waiting_call_costs_one_query(
    run, with_email, django_capture_on_commit_callbacks, django_assert_num_queries
):
    alice, _ = with_email
    NotificationPreference.objects.create(user=alice, email=Email.DIGEST)  # a digest is sent by beat, not here
    call = proposed(run, django_capture_on_commit_callbacks)
    mail.outbox.clear()
    with django_assert_num_queries(1):  # not the call, its reviewers and their preferences: nobody could be told
        notify.call_waiting(call_id=call.pk)
    assert mail.outbox == []


def test_a_waiting_call_is_handed_to_a_task_only_while_someone_asked_for_an_email_per_call(
    shop, requester, with_email, django_capture_on_commit_callbacks, monkeypatch
):
    """Asked with no statement of its own while the policy stamp stays (tests/remote/test_api_statements.py);
    a change of preferences, here as on any process's page, writes a new stamp."""
    enqueued = []
    monkeypatch.setattr(observers, "background", lambda task, call_id, pool: enqueued.append(call_id))

    def waiting_call() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return run_with(requester, REFUND_CALL).tool_calls.get(status=ToolCall.Status.PENDING).pk

    nobody = waiting_call()
    preference = NotificationPreference.objects.create(user=with_email[0], email=Email.EACH)
    alice_asked = waiting_call()
    preference.email = Email.DIGEST
    preference.save()
    digest_only = waiting_call()

    assert enqueued == [alice_asked] and nobody and digest_only


def test_a_reviewer_who_asked_gets_one_email_per_call_with_a_link(run, with_email, django_capture_on_commit_callbacks):
    alice, _ = with_email
    NotificationPreference.objects.create(user=alice, email=Email.EACH)
    call = proposed(run, django_capture_on_commit_callbacks)
    assert recipients() == ["alice@shop.example"]
    assert mail.outbox[0].subject == f"To review: issue_refund #{call.pk}"
    assert f"https://reviewhub.example.com/calls/{call.pk}/" in mail.outbox[0].body
    assert call.description in mail.outbox[0].body


def test_the_most_specific_preference_wins(run, with_email, django_capture_on_commit_callbacks):
    alice, bob = with_email
    NotificationPreference.objects.create(user=alice, email=Email.EACH)
    NotificationPreference.objects.create(user=alice, tool_name="issue_refund", email=Email.OFF)
    NotificationPreference.objects.create(user=bob, tool_name="issue_refund", email=Email.EACH)
    proposed(run, django_capture_on_commit_callbacks)
    assert recipients() == ["bob@shop.example"]


def test_a_preference_for_a_group_applies_to_that_groups_calls_only(
    run, with_email, senior, django_capture_on_commit_callbacks
):
    seniors = Group.objects.get(name="senior")
    ToolSetting.objects.create(tool_name="issue_refund", group=seniors)
    NotificationPreference.objects.create(user=senior, group=seniors, email=Email.EACH)
    proposed(run, django_capture_on_commit_callbacks)
    assert recipients() == ["sara@shop.example"]  # alice and bob are not in "senior": not theirs to decide


def test_the_requester_of_a_run_is_not_emailed_about_its_calls(run, requester, django_capture_on_commit_callbacks):
    requester.email = "rita@shop.example"
    requester.save()
    NotificationPreference.objects.create(user=requester, email=Email.EACH)
    proposed(run, django_capture_on_commit_callbacks)
    assert mail.outbox == []


def test_nothing_is_sent_until_the_transaction_commits(run, with_email, django_capture_on_commit_callbacks):
    NotificationPreference.objects.create(user=with_email[0], email=Email.EACH)
    with django_capture_on_commit_callbacks(execute=False):
        propose(run, *REFUND_CALL)
    assert mail.outbox == []


def test_a_digest_lists_what_waits_and_is_sent_again_only_when_something_new_arrives(
    run, with_email, django_capture_on_commit_callbacks
):
    alice, _ = with_email
    NotificationPreference.objects.create(user=alice, email=Email.DIGEST)
    first = proposed(run, django_capture_on_commit_callbacks)
    assert mail.outbox == []  # a digest reviewer gets no mail per call
    assert notify.digests_send() == 1
    assert "1 call(s) wait" in mail.outbox[0].body and f"/calls/{first.pk}/" in mail.outbox[0].body
    assert notify.digests_send() == 0  # nothing new since
    second = proposed(run, django_capture_on_commit_callbacks, ("issue_refund", {**REFUND_CALL[1], "amount": 30}), "c2")
    assert notify.digests_send(now=timezone.now()) == 1
    body = mail.outbox[1].body
    assert "2 call(s) wait" in body and f"/calls/{first.pk}/" in body and f"/calls/{second.pk}/" in body


def test_a_digest_only_holds_the_tools_it_was_asked_for(run, with_email, django_capture_on_commit_callbacks):
    alice, _ = with_email
    NotificationPreference.objects.create(user=alice, tool_name="send_email", email=Email.DIGEST)
    proposed(run, django_capture_on_commit_callbacks)
    assert notify.digests_send() == 0


def test_the_digest_runs_on_beat_every_few_minutes():
    entry = django_settings.CELERY_BEAT_SCHEDULE["email-digests"]
    assert entry["task"] == "ops.tasks.email_digests"
    assert entry["schedule"] == 60.0 * django_settings.NOTIFY_DIGEST_MINUTES


def test_reviewers_who_chose_chat_are_mentioned_in_the_channel_post(
    run, reviewer, reviewer2, settings, django_capture_on_commit_callbacks
):
    standin = SlackStandIn()
    try:
        settings.SLACK_BOT_TOKEN, settings.SLACK_API_URL = "xoxb-test", standin.url
        SlackChannel.objects.create(channel_id="C-REVIEW")
        SlackIdentity.objects.create(user=reviewer, slack_user_id="U-ALICE")
        SlackIdentity.objects.create(user=reviewer2, slack_user_id="U-BOB")
        NotificationPreference.objects.create(user=reviewer, chat=True)
        proposed(run, django_capture_on_commit_callbacks)
        posted = str(standin.last("chat.postMessage")["blocks"])
    finally:
        standin.close()
    assert "<@U-ALICE>" in posted and "U-BOB" not in posted


def test_calls_that_run_at_once_notify_nobody(run, with_email, django_capture_on_commit_callbacks):
    NotificationPreference.objects.create(user=with_email[0], email=Email.EACH)
    proposed(run, django_capture_on_commit_callbacks, NOTE_CALL)
    assert mail.outbox == []


def test_a_reviewer_adds_and_deletes_their_own_preferences_on_their_page(client, reviewer, reviewer2):
    client.force_login(reviewer)
    url = "/settings/notifications/"
    assert client.get(url).status_code == 200
    response = client.post(url, {"add": "1", "tool_name": "issue_refund", "email": "digest", "chat": "on"})
    assert response.status_code == 302
    row = NotificationPreference.objects.get(user=reviewer)
    assert (row.tool_name, row.email, row.chat, row.browser) == ("issue_refund", "digest", True, False)
    other = NotificationPreference.objects.create(user=reviewer2, email=Email.EACH)
    client.post(url, {"delete": other.pk})  # someone else's line: untouched
    client.post(url, {"delete": row.pk})
    assert list(NotificationPreference.objects.all()) == [other]


def test_a_second_line_for_the_same_scope_is_refused_with_a_clear_error(client, reviewer):
    client.force_login(reviewer)
    NotificationPreference.objects.create(user=reviewer, tool_name="issue_refund")
    response = client.post("/settings/notifications/", {"add": "1", "tool_name": "issue_refund", "email": "each"})
    assert response.status_code == 400
    assert "already have a preference" in response.content.decode()
    assert NotificationPreference.objects.count() == 1


def test_an_unknown_tool_or_email_choice_is_a_field_error(client, reviewer):
    client.force_login(reviewer)
    response = client.post("/settings/notifications/", {"add": "1", "tool_name": "rm -rf", "email": "hourly"})
    assert response.status_code == 400
    assert not NotificationPreference.objects.exists()


def test_a_reviewer_who_turned_browser_notifications_off_gets_the_toast_without_one(run, reviewer, reviewer2):
    from approvals.live import fanout

    NotificationPreference.objects.create(user=reviewer, tool_name="issue_refund", browser=False)
    call = propose(run, *REFUND_CALL)
    messages = fanout.call_messages(call.pk, [reviewer.pk, reviewer2.pk])
    assert 'data-toast="new" data-notify="0"' in messages[reviewer.pk]
    assert 'data-toast="new">' in messages[reviewer2.pk]


def test_the_navigation_links_to_notification_settings_for_those_who_may_set_them(client, reviewer, auditor):
    url = reverse("ops:notifications")
    client.force_login(reviewer)
    assert f'href="{url}"' in client.get(reverse("agents:runs")).content.decode()
    client.force_login(auditor)
    assert f'href="{url}"' not in client.get(reverse("agents:runs")).content.decode()
