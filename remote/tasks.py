"""Webhook deliveries: each attempt a task, the next one scheduled with its backoff as a countdown
(runtime/background.py: a Celery countdown, or a timer thread in the embedded default)."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from runtime.background import background

from .deliveries import delivery_attempt, retry_wait
from .models import WebhookDelivery
from .unclaimed import unclaimed_flag


@shared_task(acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: int) -> str:
    outcome = delivery_attempt(delivery_id=delivery_id)
    if outcome == "retry":
        schedule_delivery(delivery_id, retry_wait(delivery_id=delivery_id))
    return outcome


@shared_task(ignore_result=True)
def deliver_due() -> int:
    """Periodic (settings.CELERY_BEAT_SCHEDULE): attempts whose task was lost (a worker or, in the embedded
    default, the process gone with it) are sent again once due."""
    overdue = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=timezone.now() - timedelta(seconds=60)
    )
    ids = list(overdue.values_list("pk", flat=True)[:500])
    for pk in ids:
        schedule_delivery(pk, 0)
    return len(ids)


def schedule_delivery(delivery_id: int, countdown: float) -> None:
    """An attempt of this delivery `countdown` seconds after the caller's commit."""
    background(
        deliver_webhook, delivery_id, countdown=countdown, queue=settings.CELERY_TASK_DEFAULT_QUEUE, pool="webhooks"
    )


@shared_task(ignore_result=True)
def flag_unclaimed() -> int:
    """Periodic (settings.PERIODIC_WORK): approved calls their agent read and did not claim in time are flagged."""
    return unclaimed_flag()
