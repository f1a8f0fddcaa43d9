"""Undoing an executed reversible call, once, by a reviewer who may (access.can_undo)."""

from django.contrib.auth.models import User
from django.db import transaction

from approvals import audit, live

from ..access import can_undo
from ..models import Tier, ToolCall
from ..tools import registry
from .errors import UndoError, require


@transaction.atomic
def toolcall_undo(*, call: ToolCall, user: User) -> str:
    """Undo an executed reversible call, once, and record who did it."""
    call = ToolCall.objects.select_for_update().get(pk=call.pk)
    require(can_undo(user, call))
    tool = registry.for_call(call)
    if call.tier != Tier.REVERSIBLE or tool is None or tool.undo is None:
        raise UndoError("Only reversible tools can be undone.")
    if call.status != ToolCall.Status.EXECUTED:
        raise UndoError(f"Only executed calls can be undone; this one is {call.get_status_display().lower()}.")
    if call.run.dry_run:
        raise UndoError("A dry run wrote nothing to undo.")
    result = str(tool.undo(call.idempotency_key))
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.UNDONE)
    audit.record(audit.AuditEvent.Kind.UNDONE, tool_call=call, actor=user, payload={"result": result})
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    return result
