"""A run's life: started, a model turn claimed, waiting, failed, completed, retried, cancelled."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from approvals import access, audit, live
from approvals.advancers import advancer_for

from ..models import Message, Run, ToolCall
from ..planted import planted
from .errors import require
from .transcript import message_append

FINISHED = (Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.CANCELLED)


def turn_lease() -> timedelta:
    return timedelta(seconds=settings.TURN_LEASE_SECONDS)


def request_resume(run_id: int, *, approved: bool = False, decided: int | None = None) -> None:
    """Ask whoever advances this run to take it further, once the transaction commits: its advancer's resume
    (approvals/advancers.py: the local agent loop, REVIEWHUB_RESUME; for a run a remote agent advances, whatever
    tells that agent; for an AG-UI agent's, what resumes it). Never two.

    `approved`: this transaction approved one of the run's calls to run, so the resumption need not ask
    the database whether there is one (the seam's callables take it as a keyword). Its advancer's outbox, if it
    has one, is written first, in the caller's transaction; `decided` names the call this transaction decided,
    which the outbox may tell as it is (a remote agent's long-polls answer it without a read)."""
    if planted.is_practice_run(run_id):  # never advanced: it ends once nothing in it waits (approvals/planted.py)
        planted.finish_run(run_id)
        return
    advanced_by = Run.objects.filter(pk=run_id).values_list("advanced_by", flat=True).first()
    advancer = advancer_for(advanced_by or "")  # a run that is gone: nobody's
    if advancer.outbox is not None:  # what tells its agent, in this transaction (approvals/advancers.py)
        with transaction.atomic(savepoint=False):
            advancer.outbox(run_id, decided)
    resume = advancer.resumer()
    transaction.on_commit(lambda: resume(run_id, approved=approved))


@transaction.atomic
def run_create(
    *,
    agent: str,
    request: str,
    requested_by: User | None = None,
    system_prompt: str = "",
    dry_run: bool = False,
    advanced_by: str = Run.AdvancedBy.LOCAL,
) -> Run:
    """A new run. Started for a user (requested_by), it must be one who may start runs; without one, by the system."""
    if requested_by is not None:
        require(access.can_start_run(requested_by))
    run = Run.objects.create(
        agent=agent,
        request=request,
        requested_by=requested_by,
        dry_run=dry_run,
        max_steps=settings.AGENT_MAX_STEPS,
        advanced_by=advanced_by,
    )
    if system_prompt:
        message_append(run=run, role=Message.Role.SYSTEM, content=system_prompt)
    message_append(run=run, role=Message.Role.USER, content=request)
    audit.record(
        audit.AuditEvent.Kind.RUN_STARTED,
        run=run,
        actor=requested_by,
        payload={"agent": agent, "request": request, "dry_run": dry_run},
    )
    live.run_changed(run.pk)
    if run.advancer.starts_runs:  # not a remote agent's: its first proposal made the run, it is running already
        request_resume(run.pk)
    return run


def run_open(*, agent: str, request: str, requested_by: User, advanced_by: str) -> Run:
    """A run its advancer opens with a first step of its own (a remote agent's first proposal in a thread): not
    stored here. The step's transaction stores it (steps.step_store, turns.turn_request, through opened()) in
    the step's own statements; nobody is asked to advance it, since its advancer is the one proposing."""
    require(access.can_start_run(requested_by))
    return Run(
        agent=agent,
        request=request,
        requested_by=requested_by,
        max_steps=settings.AGENT_MAX_STEPS,
        advanced_by=advanced_by,
    )


def opened(run: Run) -> tuple[list[Message], list[audit.Entry]]:
    """For a run from run_open() just inserted: its request as message 0 and its run_started event, for the
    caller to store with the step's own rows and trail (in its chain's first append)."""
    live.run_changed(run.pk)
    payload = {"agent": run.agent, "request": run.request, "dry_run": run.dry_run}
    entry = audit.Entry(audit.AuditEvent.Kind.RUN_STARTED, actor=run.requested_by, payload=payload)
    return [Message(run=run, role=Message.Role.USER, content=run.request)], [entry]


def run_set_status(*, run: Run, status: str, error: str = "") -> None:
    fields = {"status": status, "updated_at": timezone.now(), "thinking": False}
    if status in FINISHED:
        fields["finished_at"] = timezone.now()
    if error or status != Run.Status.FAILED:
        fields["last_error"] = error
    Run.objects.filter(pk=run.pk).update(**fields)
    for key, value in fields.items():
        setattr(run, key, value)
    live.run_changed(run.pk)


def run_begin_turn(*, run: Run) -> bool:
    """Claim the next model turn. Only one worker wins; returns whether it was this one.

    A turn left "thinking" by a worker that died is taken again after the lease (TURN_LEASE_SECONDS), which
    a live worker renews while it waits for the model (turn_renew).
    """
    idle = Q(thinking=False) | Q(updated_at__lt=timezone.now() - turn_lease())
    won = Run.objects.filter(idle, pk=run.pk, status__in=Run.ACTIVE, step_count=run.step_count).update(
        status=Run.Status.RUNNING, step_count=F("step_count") + 1, thinking=True, updated_at=timezone.now()
    )
    if won:
        run.refresh_from_db()
        live.run_changed(run.pk)
    return bool(won)


def turn_renew(*, run_id: int, step: int) -> bool:
    """Keep the claim on model turn `step` while its worker waits for the model (services.Renewing): False once
    the turn is no longer this worker's (taken over after its lease, or the run stopped)."""
    turn = Run.objects.filter(pk=run_id, step_count=step, thinking=True, status__in=Run.ACTIVE)
    return bool(turn.update(updated_at=timezone.now()))


def run_resumed(*, run: Run) -> None:
    audit.record(audit.AuditEvent.Kind.RESUMED, run=run, payload={"step": run.step_count})


@transaction.atomic
def run_fail(*, run: Run, error: str) -> bool:
    """Fail an active run with the reason, shown on its page beside Retry; a finished run stays as it is."""
    now = timezone.now()
    fields = {"status": Run.Status.FAILED, "last_error": error, "thinking": False}
    fields |= {"finished_at": now, "updated_at": now}
    if not Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(**fields):
        return False
    for key, value in fields.items():
        setattr(run, key, value)
    audit.record(audit.AuditEvent.Kind.RUN_FAILED, run=run, payload={"error": error})
    live.run_changed(run.pk)
    return True


@transaction.atomic
def run_complete(*, run: Run) -> None:
    run_set_status(run=run, status=Run.Status.COMPLETED)
    audit.record(audit.AuditEvent.Kind.COMPLETED, run=run, payload={"steps": run.step_count})


@transaction.atomic
def run_retry(*, run: Run, user: User) -> None:
    """Put a failed run back in the queue from where it stopped."""
    require(access.can_act_on_run(user, run))
    updated = Run.objects.filter(pk=run.pk, status=Run.Status.FAILED).update(
        status=Run.Status.QUEUED,
        thinking=False,
        finished_at=None,
        max_steps=F("max_steps") + 1,
        updated_at=timezone.now(),
    )
    if updated:
        audit.record(audit.AuditEvent.Kind.RESUMED, run=run, actor=user, payload={"retry": True})
        live.run_changed(run.pk)
        request_resume(run.pk)


@transaction.atomic
def run_cancel(*, run: Run, user: User) -> None:
    require(access.can_act_on_run(user, run))
    # Calls first, then the run: the order a decision locks them in, so the two cannot deadlock.
    pending = list(
        ToolCall.objects.select_for_update()
        .filter(run=run, status__in=(ToolCall.Status.PENDING, ToolCall.Status.OUTCOME_UNKNOWN))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    updated = Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(
        status=Run.Status.CANCELLED, thinking=False, finished_at=timezone.now()
    )
    if updated:
        ToolCall.objects.filter(pk__in=pending).update(status=ToolCall.Status.CANCELLED)
        for call_id in pending:
            live.call_changed(call_id)
        audit.record(audit.AuditEvent.Kind.CANCELLED, run=run, actor=user)
        live.run_changed(run.pk)
        if pending and run.advancer.told_of_changes:
            request_resume(run.pk)  # the agent's long-polls and webhooks hear of its cancelled calls
