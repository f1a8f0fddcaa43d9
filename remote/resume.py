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
from .models import Webhook, WebhookDelivery
from .serialize import call_json

DECIDED = "call.decided"  # the deliveries' event type


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


def _undelivered_decided_calls(run_id: int, hooks: list[Webhook]):
    """The run's decided calls that one of these webhooks has no delivery of yet: in a thread of many decisions,
    a new one reads the calls delivered before only in this one statement, not one by one."""
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), final=True)
    delivered = WebhookDelivery.objects.filter(
        webhook=OuterRef("pk"), tool_call=OuterRef(OuterRef("pk")), event_type=DECIDED
    )
    missing = Webhook.objects.filter(pk__in=[hook.pk for hook in hooks]).exclude(Exists(delivered))
    calls = ToolCall.objects.filter(run_id=run_id).filter(Exists(decided), Exists(missing))
    return calls.select_related("run", "remote__tool").prefetch_related(ToolCall.decisions_prefetch())


def deliveries_enqueue(*, run_id: int) -> list[int]:
    """A delivery for every decided call of this run and every active webhook of its agent, once each."""
    run = Run.objects.filter(pk=run_id).select_related("remote_thread__agent").first()
    thread = getattr(run, "remote_thread", None) if run else None
    if thread is None:
        return []
    hooks = list(thread.agent.webhooks.filter(active=True))
    made = []
    for call in _undelivered_decided_calls(run_id, hooks) if hooks else []:
        event = {"type": DECIDED, "timestamp": timezone.now().isoformat(), "data": call_json(call)}
        for hook in hooks:
            delivery, created = WebhookDelivery.objects.get_or_create(
                webhook=hook,
                tool_call=call,
                event_type=DECIDED,
                defaults={"message_id": f"msg_{uuid.uuid4().hex}", "payload": event, "next_attempt_at": timezone.now()},
            )
            if created:
                made.append(delivery.pk)
    for pk in made:
        tasks.schedule_delivery(pk, 0)  # after the commit
    return made
