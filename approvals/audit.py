"""The audit trail: append-only events, each chained to the one before by hash."""

import json

from django.db import transaction
from django.utils import timezone

from .models import AuditEvent, AuditHead, canonical_json


def _json_safe(payload) -> dict:
    return json.loads(canonical_json(payload or {}))


@transaction.atomic
def record(kind: str, *, run=None, tool_call=None, actor=None, actor_label: str = "", payload=None) -> AuditEvent:
    """Append one event. The chain head is locked so events hash in order."""
    head, _ = AuditHead.objects.select_for_update().get_or_create(pk=1)
    event = AuditEvent(
        run=run if run is not None else getattr(tool_call, "run", None),
        tool_call=tool_call,
        kind=kind,
        actor=actor,
        actor_label=actor_label or (actor.get_username() if actor else "system"),
        payload=_json_safe(payload),
        created_at=timezone.now(),
        prev_hash=head.last_hash,
    )
    event.hash = event.compute_hash()
    event.save(force_insert=True)
    head.last_hash = event.hash
    head.save(update_fields=["last_hash"])
    return event


def verify(events) -> AuditEvent | None:
    """Walk events in id order; return the first one that breaks the chain."""
    previous = "0" * 64
    for event in events:
        if event.prev_hash != previous or event.compute_hash() != event.hash:
            return event
        previous = event.hash
    return None
