"""Nothing is stuck: an exchange whose worker stopped while sending it (its claim older than the stream's
timeout) fails its run with the reason. It is not sent again by itself, since the agent may have acted on it;
Retry sends the same input again. A run whose last exchange paused and has nothing left waiting (every interrupt
and every call of an offered tool decided, nothing running) while no resumption came for the grace time (its
task lost with a worker, say) is taken further: exchange_next's guard and the calls' claims keep it to one input
and one execution each, however often it is resumed."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from approvals import audit, live, services
from approvals.models import AuditEvent, Decision, Run, ToolCall

from .models import Exchange

BUSY = (ToolCall.Status.PENDING, ToolCall.Status.OUTCOME_UNKNOWN, ToolCall.Status.EXECUTING)


def resumable(*, now=None):
    """Active AG-UI runs whose last exchange paused, with nothing waiting or running, quiet for the grace time."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.SWEEP_GRACE_SECONDS)
    later = Exchange.objects.filter(run=OuterRef("run"), seq__gt=OuterRef("seq"))
    busy = ToolCall.objects.filter(run=OuterRef("run"), status__in=BUSY)
    recent = Decision.objects.filter(tool_call__run=OuterRef("run"), created_at__gte=cutoff)
    resumed = AuditEvent.objects.filter(
        audit.of_run(OuterRef("run")), kind=AuditEvent.Kind.RESUMED, created_at__gte=cutoff
    )
    paused = Exchange.objects.filter(
        status=Exchange.Status.INTERRUPTED,
        created_at__lt=cutoff,
        run__status__in=Run.ACTIVE,
        run__advanced_by=Run.AdvancedBy.AGUI,
        run__updated_at__lt=cutoff,
    )
    quiet = paused.exclude(Exists(later) | Exists(busy) | Exists(recent) | Exists(resumed))  # at most once a grace time
    return quiet.values_list("run_id", flat=True)


def stalled_resume(*, now=None) -> int:
    resumed = 0
    for run_id in resumable(now=now):
        reason = "its last exchange paused, nothing waits, and no resumption came"
        audit.record(AuditEvent.Kind.RESUMED, run=Run.objects.get(pk=run_id), payload={"agui_sweep": reason})
        live.run_changed(run_id)
        services.request_resume(run_id)  # the run's seam: agui/resume.py, after the commit
        resumed += 1
    return resumed


def stalled_fail(*, now=None) -> int:
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.AGUI_TIMEOUT_SECONDS + 60)
    stalled = Exchange.objects.filter(status=Exchange.Status.SENDING, claimed_at__lt=cutoff).select_related("run")
    failed = 0
    for exchange in stalled:
        problem = "the worker sending the input stopped before the agent's stream ended"
        if Exchange.objects.filter(pk=exchange.pk, status=Exchange.Status.SENDING).update(
            status=Exchange.Status.FAILED, last_error=problem
        ):
            reason = f"The AG-UI agent's run stopped: {problem}; the agent may have acted on it. Retry sends it again."
            failed += services.run_fail(run=exchange.run, error=reason)
    return failed
