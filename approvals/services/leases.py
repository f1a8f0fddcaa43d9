"""Claims are leases: a claim on an execution holds for EXECUTION_LEASE_SECONDS, and its claimer renews it while
the tool's body runs (ReviewHub's worker, a remote agent through POST /api/v1/calls/{id}/lease, the gateway).

A lease that lapses without a report is never silently run again. The sweep finds it: a tool declared idempotent
is released, to be claimed again with the same execution key; any other call becomes "outcome unknown", a card
in the queue where a person says what happened (services/outcomes.py).
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from approvals import audit, live

from ..models import Run, ToolCall
from ..tools import registry
from .runs import request_resume, run_set_status


def execution_lease() -> timedelta:
    return timedelta(seconds=settings.EXECUTION_LEASE_SECONDS)


def lease_until(now: datetime) -> datetime:
    return now + execution_lease()


def lease_renew(*, call_id: int, claimed_at: datetime | None = None, now: datetime | None = None) -> datetime | None:
    """Extend a live claim by one lease; None when the call is no longer executing or its lease lapsed already
    (the sweep owns it then). `claimed_at` names the claim, so a claimer whose call was taken again renews
    nothing."""
    now = now or timezone.now()
    live_claim = ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.EXECUTING, lease_expires_at__gt=now)
    if claimed_at is not None:
        live_claim = live_claim.filter(claimed_at=claimed_at)
    until = lease_until(now)
    return until if live_claim.update(lease_expires_at=until) else None


def lapsed_calls(*, now: datetime) -> QuerySet[ToolCall]:
    """Executing calls whose claim ran out without a report (claims from before leases: by their claim time)."""
    before_leases = Q(lease_expires_at__isnull=True, claimed_at__lt=now - execution_lease())
    lapsed = ToolCall.objects.filter(status=ToolCall.Status.EXECUTING).filter(
        Q(lease_expires_at__lt=now) | before_leases
    )
    return lapsed.select_related("run")


def is_idempotent(call: ToolCall) -> bool:
    tool = registry.for_call(call)
    return bool(tool is not None and tool.idempotent)


def _fresh_facts(call: ToolCall) -> tuple[dict, dict]:
    """The facts fetched again where the tool has facts (else as they were), and what changed since."""
    tool, seen = registry.for_call(call), call.facts or {}
    if tool is None or tool.facts is None:
        return seen, {}
    try:
        fresh = tool.fetch_facts(tool.parse(call.approved_arguments))
    except Exception as exc:
        return seen | {"error": f"facts could not be fetched again: {exc}"}, {}
    names = set(seen) | set(fresh)
    changes = {n: {"before": seen.get(n), "after": fresh.get(n)} for n in names if seen.get(n) != fresh.get(n)}
    return fresh, changes


def lease_retake(*, call: ToolCall, fields: dict, now: datetime) -> bool:
    """Claim again, with `fields`, an idempotent call whose lease lapsed (read as `call`): released in the trail as
    the sweep's lease_lapse() releases it, so the trail says the same whichever of the two comes first. False
    when it is not such a call, or another claimant, its reporter or the sweep came first."""
    if call.status != ToolCall.Status.EXECUTING or not is_idempotent(call):
        return False
    if not lapsed_calls(now=now).filter(pk=call.pk, claimed_at=call.claimed_at).update(**fields):
        return False
    payload = {"claimed_at": call.claimed_at, "lease_expired_at": call.lease_expires_at, "released": True}
    audit.record(audit.AuditEvent.Kind.LEASE_LAPSED, tool_call=call, payload=payload)
    return True


@transaction.atomic
def lease_lapse(*, call: ToolCall, now: datetime | None = None) -> str:
    """Settle one lapsed claim: "released" (idempotent: to be claimed again), "unknown" (a person says what
    happened), or "" when its claimer reported or renewed meanwhile."""
    now = now or timezone.now()
    still = lapsed_calls(now=now).filter(pk=call.pk, claimed_at=call.claimed_at)
    payload = {"claimed_at": call.claimed_at, "lease_expired_at": call.lease_expires_at}
    if is_idempotent(call):
        if not still.update(status=ToolCall.Status.APPROVED, lease_expires_at=None):
            return ""
        audit.record(audit.AuditEvent.Kind.LEASE_LAPSED, tool_call=call, payload=payload | {"released": True})
        if call.run.advancer.executes(call):
            request_resume(call.run_id)  # ReviewHub's worker claims it again; a remote agent claims it itself
        outcome = "released"
    else:
        facts, changes = _fresh_facts(call)
        fields = {"status": ToolCall.Status.OUTCOME_UNKNOWN, "lease_expires_at": None, "facts": facts}
        if not still.update(**fields, changed_facts=changes):
            return ""
        audit.record(audit.AuditEvent.Kind.OUTCOME_UNKNOWN, tool_call=call, payload=payload | {"facts": facts})
        if call.run.status in Run.ACTIVE:
            run_set_status(run=call.run, status=Run.Status.WAITING)
        if call.run.advancer.told_of_changes:
            request_resume(call.run_id)  # its agent's long-polls and webhooks hear the call's new status
        outcome = "unknown"
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    return outcome


def leases_lapse(*, now: datetime | None = None) -> dict:
    """The sweep's pass over lapsed claims: how many were released and how many became outcome unknown."""
    now = now or timezone.now()
    outcomes = {"released": 0, "unknown": 0}
    for call in lapsed_calls(now=now):
        if done := lease_lapse(call=call, now=now):
            outcomes[done] += 1
    return outcomes
