"""The sweep: no run stays stuck.

Workers die at any point. What a dead worker held is found here, by rule, and taken
further by resuming the run through its advancer (a run whose model ReviewHub calls:
approvals/advancers.py); the claims and the idempotency keys keep every approved call
to one execution however often a run is resumed. A claim whose lease lapsed is settled
by services/leases.py: released when its tool is idempotent, else "outcome unknown" for
a person. Celery beat runs sweep_apply() every SWEEP_INTERVAL_SECONDS; in the embedded
default a thread of the web process does.

A run the sweep resumes SWEEP_MAX_ATTEMPTS times without progress, each wait twice
the one before, is failed with the reason, for a person to Retry.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from approvals import advancers, audit, live
from approvals.lib.text import duration_text

from ..models import AuditEvent, Decision, Message, Run, ToolCall
from .leases import leases_lapse
from .runs import request_resume, run_fail, turn_lease


def grace() -> timedelta:
    """How long an approved call or a quiet run may sit before the sweep resumes it."""
    return timedelta(seconds=settings.SWEEP_GRACE_SECONDS)


def _approved_not_started(now: datetime) -> QuerySet[Run]:
    cutoff = now - grace()
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), created_at__gte=cutoff)
    calls = ToolCall.objects.filter(status=ToolCall.Status.APPROVED, created_at__lt=cutoff).exclude(Exists(decided))
    return Run.objects.filter(pk__in=calls.values("run_id"))


def _turn_lease_ran_out(now: datetime) -> QuerySet[Run]:
    return Run.objects.filter(thinking=True, updated_at__lt=now - turn_lease())


def _quiet(now: datetime) -> QuerySet[Run]:
    """No model turn, nothing to execute, nobody to wait for, and nothing new for the grace time."""
    cutoff = now - grace()

    def calls(*statuses):
        return Exists(ToolCall.objects.filter(run=OuterRef("pk"), status__in=statuses))

    recent = Exists(Message.objects.filter(run=OuterRef("pk"), created_at__gte=cutoff))
    waiting_for_a_person = Q(status=Run.Status.WAITING) & calls(
        ToolCall.Status.PENDING, ToolCall.Status.OUTCOME_UNKNOWN
    )
    busy = calls(*ToolCall.RUNNABLE)
    return Run.objects.filter(thinking=False, updated_at__lt=cutoff).exclude(busy | recent | waiting_for_a_person)


# In order: the first rule that finds a run names the reason.
RULES = (
    ("an approved call was not started", _approved_not_started),
    ("the model turn stopped before it finished", _turn_lease_ran_out),
    ("nothing was taking the run further", _quiet),
)


def stuck_runs(*, now: datetime | None = None) -> dict[int, str]:
    """Every active run that some rule finds stuck, with the first rule's reason."""
    now = now or timezone.now()
    found: dict[int, str] = {}
    ours = advancers.names(calls_model=True)  # a run whose agent calls its own model is that agent's to advance
    for reason, runs in RULES:
        active = runs(now).filter(status__in=Run.ACTIVE, advanced_by__in=ours)
        for run_id in active.values_list("pk", flat=True):
            found.setdefault(run_id, reason)
    return found


def last_progress(run: Run) -> datetime:
    """When the run last moved: a transcript row, a decision, or a failure (a Retry starts afresh)."""
    failures = AuditEvent.objects.filter(audit.of_run(run.pk), kind=AuditEvent.Kind.RUN_FAILED)
    times = [
        run.messages.aggregate(t=Max("created_at"))["t"],
        Decision.objects.filter(tool_call__run=run).aggregate(t=Max("created_at"))["t"],
        failures.aggregate(t=Max("created_at"))["t"],
        run.created_at,
    ]
    return max(t for t in times if t is not None)


def _attempts(run: Run, since: datetime) -> list[datetime]:
    """When the sweep resumed this run since it last moved."""
    events = AuditEvent.objects.filter(
        audit.of_run(run.pk), kind=AuditEvent.Kind.RESUMED, payload__has_key="sweep", created_at__gt=since
    )
    return list(events.order_by("created_at").values_list("created_at", flat=True))


def _give_up(run: Run, reason: str, since: datetime, now: datetime) -> None:
    error = (
        f"No progress for {duration_text(now - since, coarse=True)}: {reason}. The sweep resumed the run "
        f"{settings.SWEEP_MAX_ATTEMPTS} times and nothing took it further. Retry to try again."
    )
    run_fail(run=run, error=error)


def run_take_further(*, run: Run, reason: str, now: datetime | None = None) -> str:
    """Resume a stuck run, or fail it after too many tries. Returns "resumed", "later" or "failed"."""
    now = now or timezone.now()
    since = last_progress(run)
    attempts = _attempts(run, since)
    if attempts and now - attempts[-1] < grace() * 2 ** (len(attempts) - 1):
        return "later"  # the last resumption may still be on its way
    if len(attempts) >= settings.SWEEP_MAX_ATTEMPTS:
        _give_up(run, reason, since, now)
        return "failed"
    payload = {"sweep": reason, "attempt": len(attempts) + 1}
    audit.record(audit.AuditEvent.Kind.RESUMED, run=run, payload=payload)
    live.run_changed(run.pk)
    request_resume(run.pk)
    return "resumed"


def sweep_apply(*, now: datetime | None = None) -> dict:
    """The periodic pass: take every stuck run further, then settle every lapsed claim (services/leases.py:
    released to be claimed again, or outcome unknown). Returns how many runs and claims had each outcome."""
    now = now or timezone.now()
    outcomes = {"resumed": 0, "later": 0, "failed": 0}
    for run_id, reason in stuck_runs(now=now).items():
        run = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).first()
        if run is not None:
            outcomes[run_take_further(run=run, reason=reason, now=now)] += 1
    outcomes |= leases_lapse(now=now)  # a released call's run is resumed there, at once
    unreported_flag(now=now)  # each flag is in the trail and on the run page
    return outcomes


def unreported_calls(*, now: datetime | None = None) -> QuerySet[ToolCall]:
    """Calls a remote agent was allowed to execute longer than REMOTE_REPORT_SECONDS ago and never reported on."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.REMOTE_REPORT_SECONDS)
    decided = Decision.objects.filter(tool_call=OuterRef("pk"), final=True, created_at__gte=cutoff)
    flagged = AuditEvent.objects.filter(tool_call=OuterRef("pk"), kind=AuditEvent.Kind.UNREPORTED)
    calls = ToolCall.objects.filter(
        run__advanced_by__in=advancers.names(reports_results=True),
        status__in=ToolCall.RUNNABLE,
        created_at__lt=cutoff,
    ).exclude(kind=ToolCall.Kind.TURN)  # a decided turn has nothing to execute or report: the agent applies it
    return calls.exclude(Exists(decided)).exclude(Exists(flagged))


def unreported_flag(*, now: datetime | None = None) -> int:
    """Flag, once each, approved calls of remote agents never reported: in the trail and on the run page.

    Nothing is resumed: the agent executes its own calls; a person looks at why it went quiet."""
    count = 0
    limit = duration_text(timedelta(seconds=settings.REMOTE_REPORT_SECONDS), coarse=True)
    for call in unreported_calls(now=now).select_related("run"):
        payload = {"reason": f"approved, and no result reported by the agent within {limit}", "status": call.status}
        audit.record(audit.AuditEvent.Kind.UNREPORTED, tool_call=call, payload=payload)
        live.run_changed(call.run_id)
        count += 1
    return count


@dataclass(frozen=True)
class Stall:
    """What the run page says about a run that stopped moving."""

    reason: str
    quiet_for: timedelta
    attempts: int
    max_attempts: int

    @property
    def text(self) -> str:
        said = f"No progress for {duration_text(self.quiet_for, coarse=True)}: {self.reason}."
        if not self.attempts:
            return f"{said} The sweep will take it further."
        return (
            f"{said} The sweep resumed it {self.attempts} time(s) and tries again; "
            f"after {self.max_attempts} the run is failed with the reason, for you to Retry."
        )


def run_stall(*, run: Run, now: datetime | None = None) -> Stall | None:
    """Why this run is stuck, if it is, and how far the sweep has got with it."""
    if not run.is_active or not run.advancer.calls_model:
        return None
    now = now or timezone.now()
    reason = next((reason for reason, runs in RULES if runs(now).filter(pk=run.pk).exists()), None)
    if reason is None:
        return None
    since = last_progress(run)
    return Stall(reason, now - since, len(_attempts(run, since)), settings.SWEEP_MAX_ATTEMPTS)
