"""Notifications that follow the reviewer: email (one per call, or a digest), Slack, and the
browser (live.js, while the queue is open), each as the reviewer's preferences say.

Everything here runs in a task (ops/tasks.py), which ops/observers.py enqueues after the commit
of the audit event that called for it: no mail and no Slack request ever happens inside a
decision's transaction.
"""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.utils import timezone

from approvals.access import can_decide, reviewers_for, visible_calls
from approvals.models import ToolCall
from approvals.policy import snapshot as policy_snapshot

from . import metrics, slack
from .links import call_link
from .models import DigestState, NotificationPreference
from .preferences import preference_for, preferences_by_user

log = logging.getLogger(__name__)
Email = NotificationPreference.Email


def _mail(subject: str, body: str, address: str) -> bool:
    try:
        send_mail(subject, body, None, [address], fail_silently=False)
    except Exception as exc:  # a notification is a courtesy: the queue shows the call anyway
        log.warning("could not email %s: %s", address, exc)
        metrics.NOTIFICATIONS.labels("email", "failed").inc()
        return False
    metrics.NOTIFICATIONS.labels("email", "sent").inc()
    return True


def _someone_wants_each_email() -> bool:
    return NotificationPreference.objects.filter(email=Email.EACH).exists()


_told = ("", True)  # (a policy stamp, whether anyone asked for an email per call under it)


def anyone_to_tell() -> bool:
    """Whether a call that starts waiting may have someone to tell now: Slack is set up, or someone asked for
    an email per call. ops/observers.py asks before enqueueing call_waiting, which every proposal did: in a
    fleet proposing, ~0.7 ms of the web process's CPU to publish it and ~2 ms of the worker's to find nobody to
    tell (bench/README.md, issue 26). Read once per policy stamp (approvals/policy/snapshot.py; a change of
    preferences writes a new one, ops/apps.py), the stamp this thread read for the call's policy a moment ago."""
    if settings.SLACK_BOT_TOKEN:
        return True
    global _told
    stamp, told = policy_snapshot.read_last().stamp, _told
    if told[0] != stamp:
        told = _told = (stamp, _someone_wants_each_email())
    return told[1]


def call_waiting(*, call_id: int) -> None:
    """A call waits for a decision: one email to each reviewer who asked for one per call, and the
    group's Slack channel, mentioning the reviewers who asked for chat.

    Without Slack and without anyone who asked for an email per call (for some tool or group) there is nothing
    to send, and one query says so: a fleet proposing thirty calls a second cost the worker four queries and
    5-8 ms of CPU for each call otherwise."""
    if not settings.SLACK_BOT_TOKEN and not _someone_wants_each_email():
        return
    call = ToolCall.objects.select_related("run", "review_group").filter(pk=call_id).first()
    if call is None or not call.is_pending:
        return
    users = list(reviewers_for(call))
    preferences = preferences_by_user(users, call)
    for user in users:
        if preferences[user.pk].email == Email.EACH and user.email:
            body = f"{call.current_description}\n\nDecide it in ReviewHub: {call_link(call)}\n"
            _mail(f"To review: {call.tool_name} #{call.pk}", body, user.email)
    if settings.SLACK_BOT_TOKEN:
        slack.call_post(call=call, mention=[user for user in users if preferences[user.pk].chat])


def waiting_for(user) -> list[ToolCall]:
    """The pending calls this user may decide and wants in the digest, oldest first."""
    calls = visible_calls(user, ToolCall.objects.filter(status=ToolCall.Status.PENDING)).select_related(
        "run", "review_group"
    )
    rows = list(NotificationPreference.objects.filter(user=user))
    return [
        call
        for call in calls.order_by("created_at", "pk")
        if preference_for(user, call, rows).email == Email.DIGEST and can_decide(user, call)[0]
    ]


def digest_send(*, user, now=None) -> bool:
    """Email this user what waits for them, if anything arrived since their last digest."""
    now = now or timezone.now()
    state = DigestState.objects.filter(user=user).first()
    calls = waiting_for(user)
    since = state.sent_at if state else None
    if not user.email or not any(since is None or call.created_at > since for call in calls):
        return False
    lines = [f"- {call.current_description}\n  {call_link(call)}" for call in calls]
    body = f"{len(calls)} call(s) wait for your decision:\n\n" + "\n".join(lines) + "\n"
    if not _mail(f"ReviewHub: {len(calls)} call(s) wait for you", body, user.email):
        return False
    DigestState.objects.update_or_create(user=user, defaults={"sent_at": now})
    return True


def digests_send(*, now=None) -> int:
    """The periodic pass (beat, every NOTIFY_DIGEST_MINUTES): one digest to each reviewer who chose them."""
    wanting = NotificationPreference.objects.filter(email=Email.DIGEST).values("user")
    users = get_user_model().objects.filter(pk__in=wanting, is_active=True)
    return sum(digest_send(user=user, now=now) for user in users)
