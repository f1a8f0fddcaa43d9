"""The audit trail's observer for notifications (settings.REVIEWHUB_OBSERVERS): it runs after the commit
of each event and only enqueues the tasks of ops/tasks.py (runtime/background.py), never sends itself."""

from django.conf import settings

from approvals.models import AuditEvent
from runtime.background import background

from . import notify, tasks

Kind = AuditEvent.Kind
WAITING = {Kind.PROPOSED, Kind.ESCALATED, Kind.RETURNED}  # a call that (again) waits for someone
SETTLED = {Kind.DECIDED, Kind.EXPIRED, Kind.EXECUTED, Kind.FAILED}


def event_notified(event: AuditEvent) -> None:
    """Enqueue what this event means for people."""
    if event.tool_call_id and event.kind in WAITING:
        if notify.anyone_to_tell():
            background(tasks.call_waiting, event.tool_call_id, pool="notify")
    elif event.tool_call_id and event.kind in SETTLED and settings.SLACK_BOT_TOKEN:
        background(tasks.call_settled, event.tool_call_id, pool="notify")
    elif event.kind == Kind.CANCELLED and event.run_id and settings.SLACK_BOT_TOKEN:
        background(tasks.run_cancelled, event.run_id, pool="notify")
