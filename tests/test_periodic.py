"""Periodic work is one table that Celery beat and the embedded default both read: what production does every
N seconds, the embedded default does too (digests and webhook retries included)."""

import pytest
from django.conf import settings
from django.core import mail
from django.utils import timezone

from ops.models import NotificationPreference
from remote.models import WebhookDelivery
from runtime import periodic

from .reviewing import pending_call
from .test_api_webhooks import decide, hooked, receiver  # noqa: F401 (fixtures)
from .waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_beat_schedules_exactly_the_tasks_of_the_table():
    beat = {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}
    assert beat == {name: entry.task for name, entry in settings.PERIODIC_WORK.items()}
    assert {"agents.tasks.sweep", "remote.tasks.deliver_due", "ops.tasks.email_digests"} <= set(beat.values())


def test_the_embedded_loop_runs_every_periodic_task_of_production_when_due(db):
    due = dict.fromkeys(settings.PERIODIC_WORK, 0.0)
    ran = periodic.run_due(settings.PERIODIC_WORK, due, now=1.0)
    assert ran == list(settings.CELERY_BEAT_SCHEDULE)
    assert all(due[name] == 1.0 + entry.seconds for name, entry in settings.PERIODIC_WORK.items())
    assert periodic.run_due(settings.PERIODIC_WORK, due, now=2.0) == []  # none due again yet


def test_nothing_runs_before_its_first_interval_has_passed(db):
    due: dict = {}
    assert periodic.run_due(settings.PERIODIC_WORK, due, now=100.0) == []
    assert set(due) == set(settings.PERIODIC_WORK)


def test_the_embedded_default_sends_email_digests(make_run, reviewer, settings):
    settings.TASKS_IN_PROCESS = True
    NotificationPreference.objects.create(user=reviewer, email=NotificationPreference.Email.DIGEST)
    reviewer.email = "alice@example.com"
    reviewer.save()
    pending_call(make_run)
    mail.outbox.clear()
    periodic.run_due({"digests": settings.PERIODIC_WORK["email-digests"]}, {"digests": 0.0}, now=1.0)
    assert [message.to for message in mail.outbox] == [["alice@example.com"]]


def test_the_embedded_default_retries_a_webhook_delivery_whose_attempt_was_lost(
    hooked,  # noqa: F811
    receiver,  # noqa: F811
    reviewer,
    settings,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    settings.TASKS_IN_PROCESS = True
    monkeypatch.setattr("remote.deliveries.BACKOFF", (3600,) * 7)  # the retry's own timer: not within this test
    agent, _ = hooked
    receiver[1].status = 500
    call = decide(agent, reviewer, django_capture_on_commit_callbacks)
    assert wait_for(lambda: WebhookDelivery.objects.get(tool_call=call).last_status_code == 500, timeout=30)
    receiver[1].status = 200
    WebhookDelivery.objects.filter(tool_call=call).update(next_attempt_at=timezone.now() - timezone.timedelta(hours=1))

    periodic.run_due({"due": settings.PERIODIC_WORK["webhook-deliveries-due"]}, {"due": 0.0}, now=1.0)

    assert wait_for(lambda: WebhookDelivery.objects.get(tool_call=call).status == "delivered", timeout=30)
    delivery = WebhookDelivery.objects.get(tool_call=call)
    assert delivery.attempts == 2, (delivery.attempts, delivery.last_status_code, delivery.last_error)
    assert len(receiver[1].received) == 2
