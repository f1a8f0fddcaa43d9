"""Webhooks: registered with a secret shown once, a delivery sent again on the admin's say.
Deliveries are queued by the resumption seam (remote/resume.py) and sent by remote/deliveries.py."""

import base64
import secrets

from django.utils import timezone

from .. import targets, tasks
from ..errors import Invalid
from ..models import RemoteAgent, Webhook, WebhookDelivery


def webhook_create(*, agent: RemoteAgent, url: str) -> tuple[Webhook, str]:
    """Register a target (checked now and again before every delivery); returns the secret, shown once."""
    try:
        targets.resolve(url)
    except targets.TargetRefused as exc:
        raise Invalid(f"url: {exc}", {"url": [str(exc)]})
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    return Webhook.objects.create(agent=agent, url=url, secret=secret), secret


def delivery_redeliver(*, delivery: WebhookDelivery) -> None:
    """Send again now, with the backoff starting afresh (the admin's Redeliver)."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.Status.PENDING, attempts=0, next_attempt_at=timezone.now()
    )
    tasks.schedule_delivery(delivery.pk, 0)
