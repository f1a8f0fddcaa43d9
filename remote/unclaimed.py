"""Approved calls an agent read and did not claim. An agent claims an approved call just before it runs the tool
(`execute_once`, or a framework adapter that wraps the tool): a tool that runs without claiming runs unchecked —
a reviewer's edit is not applied, a second resume runs it again, and no result comes back. ReviewHub cannot see
such a tool run, but it sees the agent read the approval and go quiet: `approval_read` stamps the first read of
an approved call, and `unclaimed_flag` (periodic work, every SWEEP_INTERVAL_SECONDS) flags, once per read, the
calls still unclaimed REMOTE_CLAIM_SECONDS later: in the trail and on the call's card."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from approvals import audit, live
from approvals.models import AuditEvent, ToolCall

from .models import RemoteCall

NOT_CLAIMED = AuditEvent.Kind.NOT_CLAIMED


def approval_read(call: ToolCall) -> None:
    """The agent just read this call: if it is approved and not read since its last claim, say when. `call` as
    the agent API reads it (remote.services.agent_call: its RemoteCall with it), so a poll of a call already
    stamped writes nothing."""
    if call.status != ToolCall.Status.APPROVED:
        return
    read_at = call.remote.approval_read_at
    if read_at is not None and (call.claimed_at is None or read_at >= call.claimed_at):
        return
    approval_read_stamp(call.pk, timezone.now())


def approval_read_stamp(call_id: int, read_at: datetime) -> None:
    """The approved call's agent read it at `read_at`: stamped if it is the first read since its last claim, in
    one statement and without a read (a long-poll told the decision answers with none: remote/api.py)."""
    since_claim = Q(approval_read_at__isnull=True) | Q(approval_read_at__lt=F("tool_call__claimed_at"))
    approved = Q(tool_call__status=ToolCall.Status.APPROVED)
    RemoteCall.objects.filter(since_claim, approved, pk=call_id).update(approval_read_at=read_at)


def unclaimed_calls(*, now: datetime | None = None) -> QuerySet[RemoteCall]:
    """Approved calls read REMOTE_CLAIM_SECONDS ago or longer, not claimed since, not yet flagged for that read."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.REMOTE_CLAIM_SECONDS)
    flagged = AuditEvent.objects.filter(
        tool_call=OuterRef("tool_call"), kind=NOT_CLAIMED, created_at__gte=OuterRef("approval_read_at")
    )
    claimed_since = Q(tool_call__claimed_at__gte=F("approval_read_at"))
    calls = RemoteCall.objects.filter(tool_call__status=ToolCall.Status.APPROVED, approval_read_at__lt=cutoff)
    return calls.exclude(claimed_since).exclude(Exists(flagged)).select_related("tool_call", "agent")


def unclaimed_flag(*, now: datetime | None = None) -> int:
    """Flag each approved call its agent read and did not claim in time; how many were flagged."""
    now = now or timezone.now()
    count = 0
    for remote in unclaimed_calls(now=now):
        read_at = remote.approval_read_at
        assert read_at is not None  # unclaimed_calls: read before the cutoff
        waited = int((now - read_at).total_seconds())
        payload = {"agent": remote.agent.name, "read_at": read_at, "seconds_since_read": waited}
        audit.record(NOT_CLAIMED, tool_call=remote.tool_call, payload=payload)
        live.call_changed(remote.tool_call_id)
        live.run_changed(remote.tool_call.run_id)
        count += 1
    return count
