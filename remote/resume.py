"""What a remote agent is told of a decision (or an expiry, a cancel) on its run: its advancer's outbox and its
resumption seam (settings.REVIEWHUB_REMOTE_RESUME).

`outbox` runs inside the decision's transaction: the webhook deliveries are made there, so they commit with it,
and as it commits the agent's long-polls are woken and each delivery's task is published (remote/tasks.py), before
any other statement of the deciding process after its commit (the audit observers' log line and counters, which
read nothing, go first). `run_decided`, after the commit, marks the run running.
Nothing here executes anything: the agent does, after claiming the call.
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


def outbox(run_id: int, decided: int | None = None) -> None:
    """The remote advancer's outbox (approvals/advancers.py), in the transaction that lets the run go on: its
    decided calls' long-polls woken as it commits, their webhook deliveries made in it (and sent as it commits).
    `decided`: the call this transaction decided, told to its long-polls as the commit leaves it (_told)."""
    finished = ToolCall.objects.filter(run_id=run_id).exclude(status=ToolCall.Status.PENDING)
    calls = list(finished.values_list("pk", flat=True))
    answers = _told(decided) if decided in calls else {}
    transaction.on_commit(lambda: waiting.wake(calls, answers))
    deliveries_enqueue(run_id, built=answers)


def _told(call_id: int) -> dict:
    """The decided call as its agent will read it once this transaction commits (the url made by each
    long-poll for its own request): in two statements, the call with its declared tool, its decisions."""
    calls = ToolCall.objects.select_related("remote__tool").prefetch_related(ToolCall.decisions_prefetch())
    call = calls.filter(pk=call_id).first()
    return {str(call_id): call_json(call)} if call is not None else {}


def run_decided(run_id: int, *, approved: bool = False) -> None:
    """Called after the commit whose outbox told the agent: its run is running again unless a call in it still
    waits for a person. `approved` (the seam's hint) changes nothing here: the agent claims its approved calls."""
    pending = ToolCall.objects.filter(run=OuterRef("pk"), status=ToolCall.Status.PENDING)
    Run.objects.filter(pk=run_id, status=Run.Status.WAITING).exclude(Exists(pending)).update(status=Run.Status.RUNNING)


def _undelivered_decided_calls(run_id: int, hooks: list[Webhook]):
    """The run's decided calls that one of these webhooks has no delivery of yet: in a thread of many decisions,
    a new one reads the calls delivered before only in this one statement, not one by one."""
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), final=True)
    delivered = WebhookDelivery.objects.filter(
        webhook=OuterRef("pk"), tool_call=OuterRef(OuterRef("pk")), event_type=DECIDED
    )
    missing = Webhook.objects.filter(pk__in=[hook.pk for hook in hooks]).exclude(Exists(delivered))
    calls = ToolCall.objects.filter(run_id=run_id).filter(Exists(decided), Exists(missing))
    calls = calls.select_related("run", "remote__tool").prefetch_related(ToolCall.decisions_prefetch())
    return calls.order_by("pk")  # two decisions' transactions insert shared rows in one order: neither waits on both


def deliveries_enqueue(run_id: int, *, built: dict | None = None) -> list[int]:
    """A delivery for every decided call of this run and every active webhook of its agent, once each, each sent
    by a task after the caller's commit. `built`: calls' JSON already built in this transaction ({str(id): ...},
    the outbox's told call), used as it is."""
    built = built or {}
    run = Run.objects.filter(pk=run_id).select_related("remote_thread__agent").first()
    thread = getattr(run, "remote_thread", None) if run else None
    if thread is None:
        return []
    hooks = list(thread.agent.webhooks.filter(active=True).order_by("pk"))
    made = []
    for call in _undelivered_decided_calls(run_id, hooks) if hooks else []:
        data = built.get(str(call.pk)) or call_json(call)
        event = {"type": DECIDED, "timestamp": timezone.now().isoformat(), "data": data}
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
