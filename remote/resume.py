"""The resumption seam for runs a remote agent advances (settings.REVIEWHUB_REMOTE_RESUME).

A decision (or an expiry) on such a run wakes the agent's long-polls and sends its webhooks (a delivery
per decided call and webhook, sent by remote/tasks.py);
nothing here executes anything: the agent does, after claiming the call.
"""

import uuid

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from approvals.models import Decision, Run, ToolCall

from . import tasks, waiting
from .models import WebhookDelivery
from .serialize import call_json


def run_decided(run_id: int, *, approved: bool = False) -> None:
    """Called after the decision's commit. `approved` (the seam's hint) changes nothing here: the agent hears of
    every decision and claims its approved calls itself."""
    calls = list(
        ToolCall.objects.filter(run_id=run_id).exclude(status=ToolCall.Status.PENDING).values_list("pk", flat=True)
    )
    waiting.wake(calls)
    pending = ToolCall.objects.filter(run=OuterRef("pk"), status=ToolCall.Status.PENDING)
    with transaction.atomic():
        Run.objects.filter(pk=run_id, status=Run.Status.WAITING).exclude(Exists(pending)).update(
            status=Run.Status.RUNNING
        )
        deliveries_enqueue(run_id=run_id)


def _decided_calls(run_id: int):
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), final=True)
    return ToolCall.objects.filter(run_id=run_id).filter(Exists(decided)).select_related("run", "remote__tool")


def deliveries_enqueue(*, run_id: int) -> list[int]:
    """A delivery for every decided call of this run and every active webhook of its agent, once each."""
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
        tasks.schedule_delivery(pk, 0)  # after the commit
    return made
