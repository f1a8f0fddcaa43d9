"""Webhooks: registered with a secret shown once; each decision delivered signed as Standard Webhooks
specifies (the `standardwebhooks` package), logged, and retried with backoff for about a day."""

import base64
import functools
import json
import logging
import secrets
import ssl
import time
import uuid
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from standardwebhooks.webhooks import Webhook as Signer

from approvals import observers
from approvals.models import Decision, Run, ToolCall

from .. import targets
from ..errors import Invalid
from ..models import RemoteAgent, Webhook, WebhookDelivery

log = logging.getLogger(__name__)

# Seconds to wait before attempts 2 to 8: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 h in all).
BACKOFF = (5, 300, 1800, 7200, 18000, 36000, 36000)
ATTEMPTS = len(BACKOFF) + 1


def webhook_create(*, agent: RemoteAgent, url: str) -> tuple[Webhook, str]:
    """Register a target (checked now and again before every delivery); returns the secret, shown once."""
    try:
        targets.resolve(url)
    except targets.TargetRefused as exc:
        raise Invalid(f"url: {exc}", {"url": [str(exc)]})
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    return Webhook.objects.create(agent=agent, url=url, secret=secret), secret


def schedule(delivery_id: int, countdown: float) -> None:
    from ..tasks import schedule_delivery  # the task module imports this one

    schedule_delivery(delivery_id, countdown)


def _decided_calls(run_id: int):
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), final=True)
    return ToolCall.objects.filter(run_id=run_id).filter(Exists(decided)).select_related("run", "remote__tool")


def deliveries_enqueue(*, run_id: int) -> list[int]:
    """A delivery for every decided call of this run and every active webhook of its agent, once each."""
    from ..serialize import call_json

    run = Run.objects.filter(pk=run_id).select_related("remote_thread__agent").first()
    thread = getattr(run, "remote_thread", None) if run else None
    if thread is None:
        return []
    hooks = list(thread.agent.webhooks.filter(active=True))
    made = []
    for call in _decided_calls(run_id) if hooks else []:
        event = {"type": "call.decided", "timestamp": timezone.now().isoformat(), "data": call_json(call)}
        for hook in hooks:
            delivery, created = WebhookDelivery.objects.get_or_create(
                webhook=hook,
                tool_call=call,
                event_type="call.decided",
                defaults={"message_id": f"msg_{uuid.uuid4().hex}", "payload": event, "next_attempt_at": timezone.now()},
            )
            if created:
                made.append(delivery.pk)
    for pk in made:
        transaction.on_commit(lambda pk=pk: schedule(pk, 0))
    return made


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
    """One attempt, if one is due and nobody else took it: "delivered", "retry", "failed" or "skipped"."""
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
    fields = {"last_status_code": code, "last_error": error}
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
    if outcome == "retry":
        schedule(delivery_id, wait)
    elif outcome == "failed":
        log.warning("webhook delivery %s gave up after %s attempts: %s", delivery_id, attempts, error)
    return outcome


def delivery_redeliver(*, delivery: WebhookDelivery) -> None:
    """Send again now, with the backoff starting afresh (the admin's Redeliver)."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.Status.PENDING, attempts=0, next_attempt_at=timezone.now()
    )
    transaction.on_commit(lambda: schedule(delivery.pk, 0))
