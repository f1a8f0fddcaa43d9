"""Webhook deliveries: a Celery task with a countdown per attempt, or (embedded default) a timer thread."""

import logging
import threading
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: int) -> str:
    from .services import delivery_attempt

    return delivery_attempt(delivery_id=delivery_id)


@shared_task(ignore_result=True)
def deliver_due() -> int:
    """Celery beat: attempts whose task was lost (a worker gone with it) are sent again once due."""
    from .models import WebhookDelivery

    overdue = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=timezone.now() - timedelta(seconds=60)
    )
    ids = list(overdue.values_list("pk", flat=True)[:500])
    for pk in ids:
        schedule_delivery(pk, 0)
    return len(ids)


def _attempt_here(delivery_id: int) -> None:
    close_old_connections()
    try:
        deliver_webhook(delivery_id)
    except Exception:
        log.exception("webhook delivery %s failed", delivery_id)
    finally:
        close_old_connections()


def schedule_delivery(delivery_id: int, countdown: float) -> None:
    if settings.TASKS_IN_PROCESS:
        timer = threading.Timer(countdown, _attempt_here, args=(delivery_id,))
        timer.daemon = True
        timer.start()
    else:
        deliver_webhook.apply_async((delivery_id,), countdown=countdown, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
