"""Sending webhook deliveries: one attempt, signed as Standard Webhooks specifies (the `standardwebhooks`
package), logged, and the backoff of the attempts that follow (about a day). remote/tasks.py runs attempts
and schedules the next one; remote/services/webhooks.py registers targets and queues deliveries."""

import functools
import json
import logging
import ssl
import time
from datetime import timedelta

import httpx
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from standardwebhooks.webhooks import Webhook as Signer

from approvals.audit import observers

from . import targets
from .models import WebhookDelivery

log = logging.getLogger(__name__)

# Seconds to wait before attempts 2 to 8: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 h in all).
BACKOFF = (5, 300, 1800, 7200, 18000, 36000, 36000)
ATTEMPTS = len(BACKOFF) + 1


@functools.cache
def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process: httpx builds a new one for every Client, loading the CA bundle,
    which took 190 ms of a delivery's 240 on the busy bench machine (bench/agents_waiting.py)."""
    return httpx.create_ssl_context(trust_env=False)


def _send(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """POST the event, signed; the status code (None when none came) and what went wrong ("" when nothing)."""
    try:
        target = targets.resolve(delivery.webhook.url)
    except targets.TargetRefused as exc:
        return None, str(exc)
    body = json.dumps(delivery.payload, ensure_ascii=False)
    now = timezone.now()
    headers = {
        "content-type": "application/json",
        "user-agent": "ReviewHub-Webhooks/1",
        "host": target.host_header,
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Signer(delivery.webhook.secret).sign(delivery.message_id, now, body),
    }
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    timeout = settings.REVIEWHUB_WEBHOOK_TIMEOUT_SECONDS
    try:
        with httpx.Client(trust_env=False, verify=_tls(), follow_redirects=False, timeout=timeout) as client:
            response = client.post(target.url, content=body.encode(), headers=headers, extensions=extensions)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:1000]
    if 200 <= response.status_code < 300:
        return response.status_code, ""
    note = " (redirects are not followed)" if 300 <= response.status_code < 400 else ""
    return response.status_code, f"HTTP {response.status_code}{note}"


def delivery_attempt(*, delivery_id: int) -> str:
    """One attempt, if one is due and nobody else took it: "delivered", "retry" (the task schedules the next
    attempt, retry_wait() seconds later), "failed" or "skipped"."""
    now = timezone.now()
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None:
        return "skipped"
    due = WebhookDelivery.objects.filter(
        pk=delivery_id, status=WebhookDelivery.Status.PENDING, attempts=delivery.attempts, next_attempt_at__lte=now
    )
    if not due.update(attempts=F("attempts") + 1, last_attempt_at=now, next_attempt_at=None):
        return "skipped"  # delivered, given up, not due yet, or another worker has this attempt
    started = time.monotonic()
    code, error = _send(delivery)
    observers.measured("webhook_delivery", time.monotonic() - started, "failed" if error else "")
    attempts = delivery.attempts + 1
    fields: dict[str, object] = {"last_status_code": code, "last_error": error}
    if not error:
        outcome, fields = (
            "delivered",
            fields | {"status": WebhookDelivery.Status.DELIVERED, "delivered_at": timezone.now()},
        )
    elif attempts >= ATTEMPTS:
        outcome, fields = "failed", fields | {"status": WebhookDelivery.Status.FAILED}
    else:
        wait = BACKOFF[attempts - 1]
        outcome, fields = "retry", fields | {"next_attempt_at": timezone.now() + timedelta(seconds=wait)}
    WebhookDelivery.objects.filter(pk=delivery_id).update(**fields)
    if outcome == "failed":
        log.warning("webhook delivery %s gave up after %s attempts: %s", delivery_id, attempts, error)
    return outcome


def retry_wait(*, delivery_id: int) -> int:
    """Seconds until the next attempt of a delivery whose attempt said "retry"."""
    attempts = WebhookDelivery.objects.values_list("attempts", flat=True).get(pk=delivery_id)
    return BACKOFF[attempts - 1]
