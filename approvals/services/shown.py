"""What a reviewer was shown when deciding, and how they chose: written into each decision's trail record.

The options offered, the warnings shown, the time from opening the card (their review_claimed event) to
deciding, and the channel the decision came by."""

from datetime import datetime

from django.utils import timezone

from ..models import AuditEvent, ToolCall
from ..tools import offered_decisions

# How a decision was made: a button on the card, a keyboard shortcut, the queue's batch approval,
# a chat message's button (Slack), or a program calling the service (the API, a command).
CHANNELS = ("button", "key", "batch", "slack", "api")


def channel_of(value: str) -> str:
    """A channel as stored: one of CHANNELS; anything else a caller sends reads as "api"."""
    return value if value in CHANNELS else "api"


def opened_at(call: ToolCall, reviewer) -> datetime | None:
    """When this reviewer last opened this call's card (None when they never did: a batch or a chat decision)."""
    events = AuditEvent.objects.filter(kind=AuditEvent.Kind.REVIEW_CLAIMED, tool_call=call, actor=reviewer)
    return events.order_by("-created_at").values_list("created_at", flat=True).first()


def seconds_open(call: ToolCall, reviewer, now: datetime | None = None) -> float | None:
    opened = opened_at(call, reviewer) if reviewer is not None else None
    if opened is None:
        return None
    return round(((now or timezone.now()) - opened).total_seconds(), 3)


def what_was_shown(*, call: ToolCall, reviewer, channel: str, proof=None) -> dict:
    """The trail's record of the card the decision was made on; `proof`, what the card sent (friction.Proof):
    whether its facts were in view (None when the card did not say: no JavaScript, a batch, a chat button)."""
    warnings = [text for text in (call.warning, call.returned_reason) if text]
    return {
        "options_offered": list(offered_decisions(call)),
        "warnings_shown": warnings,
        "seconds_from_open": seconds_open(call, reviewer),
        "channel": channel_of(channel),
        "facts_in_view": getattr(proof, "facts_in_view", None),
    }
