"""The resumption seam for runs a remote agent advances (settings.REVIEWHUB_REMOTE_RESUME).

A decision (or an expiry) on such a run wakes the agent's long-polls and sends its webhooks;
nothing here executes anything: the agent does, after claiming the call.
"""

from django.db import transaction
from django.db.models import Exists, OuterRef

from approvals.models import Run, ToolCall

from . import waiting
from .services import deliveries_enqueue


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
