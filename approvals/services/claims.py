"""Claims: "being reviewed by X" for a few minutes. A hint for other reviewers, never a lock."""

from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals import audit, live

from ..access import can_decide, may_act
from ..models import ToolCall
from .errors import AlreadyDecided, require

REVIEW_CLAIM = timedelta(minutes=5)


def toolcall_review_start(*, call_id: int, reviewer: User) -> bool:
    """Mark a pending call as being reviewed by this reviewer for a few minutes.

    Anyone allowed may still decide. Someone else's live claim is left alone.
    Returns whether the reviewer holds the claim.
    """
    call = ToolCall.objects.select_related("run").get(pk=call_id)
    require(can_decide(reviewer, call))
    if not call.is_pending:
        raise AlreadyDecided(call, call.final_decision())
    now = timezone.now()
    until = now + REVIEW_CLAIM
    pending = ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.PENDING)
    if pending.filter(reviewing_by=reviewer, reviewing_until__gt=now).update(reviewing_until=until):
        return True
    with transaction.atomic():
        free = Q(reviewing_by__isnull=True) | Q(reviewing_until__isnull=True) | Q(reviewing_until__lte=now)
        if not pending.filter(free).update(reviewing_by=reviewer, reviewing_until=until):
            return False
        audit.record(audit.AuditEvent.Kind.REVIEW_CLAIMED, tool_call=call, actor=reviewer, payload={"until": until})
        live.call_changed(call.pk)
    return True


def toolcall_review_release(*, call_id: int, reviewer: User) -> bool:
    require(may_act(reviewer))
    with transaction.atomic():
        mine = ToolCall.objects.filter(pk=call_id, reviewing_by=reviewer)
        if not mine.update(reviewing_by=None, reviewing_until=None):
            return False
        call = ToolCall.objects.select_related("run").get(pk=call_id)
        audit.record(audit.AuditEvent.Kind.REVIEW_RELEASED, tool_call=call, actor=reviewer)
        live.call_changed(call_id)
    return True
