"""Verify ReviewHub's webhooks, signed as the Standard Webhooks specification says (the `standardwebhooks`
package checks the signature and refuses timestamps more than five minutes off)."""

from collections.abc import Mapping

from pydantic import ValidationError
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from .errors import WebhookInvalid
from .models import WebhookEvent


def verify_webhook(body: bytes | str, headers: Mapping[str, str], secret: str) -> WebhookEvent:
    """The event a webhook delivers (`event.data` is the call), or WebhookInvalid if it is not ReviewHub's.

    Pass the raw body as received and the request's headers (webhook-id, webhook-timestamp,
    webhook-signature); `secret` is the `whsec_...` shown once when the webhook was registered."""
    lowered = {key.lower(): value for key, value in headers.items()}
    try:
        payload = Webhook(secret).verify(body, lowered)
    except WebhookVerificationError as exc:
        raise WebhookInvalid(str(exc)) from exc
    try:
        return WebhookEvent.model_validate(payload)
    except ValidationError as exc:
        raise WebhookInvalid(f"the webhook's body is not a call event: {exc.error_count()} errors") from exc
