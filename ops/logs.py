"""One structured log line per event that matters, from the audit trail once it is committed.

Each line names the event, the run, the call, the tool, the actor, the outcome and the
timing; as JSON (python-json-logger) with LOG_FORMAT=json, else as `key=value` text. The
arguments appear only with the tool's sensitive fields masked; the trail keeps them whole.
"""

import logging

from approvals.models import AuditEvent
from approvals.tools import registry

log = logging.getLogger("reviewhub.events")

Kind = AuditEvent.Kind
# Hints and steps inside another event (claims, "executing", "deadline near") are left to the trail.
QUIET = {Kind.REVIEW_CLAIMED, Kind.REVIEW_RELEASED, Kind.EXECUTING, Kind.DEADLINE_NEAR}
WITH_ARGUMENTS = {Kind.PROPOSED, Kind.AUTO_RUN, Kind.DECIDED}
SHORT_STATES: dict[str, str] = {Kind.PROPOSED: "pending", Kind.AUTO_RUN: "run without review"}


def outcome(event: AuditEvent) -> str:
    """What happened, in a word or two: the verdict of a decision, the status of a call or run."""
    payload = event.payload or {}
    if event.kind == Kind.DECIDED:
        return str(payload.get("verdict", "")) + ("" if payload.get("final", True) else " (counted)")
    if event.kind == Kind.ESCALATED:
        return f"escalated to {payload.get('to_group', '')}"
    if event.kind == Kind.RUN_FAILED:
        return f"failed: {payload.get('error', '')}"
    return SHORT_STATES.get(event.kind, str(event.kind))


def seconds(event: AuditEvent) -> float | None:
    """How long the step took: a decision or expiry since the proposal, an execution since its claim,
    a run's end since its start."""
    call, run = event.tool_call, event.run
    start = None
    if call is not None and event.kind in (Kind.DECIDED, Kind.EXPIRED, Kind.ESCALATED):
        start = call.created_at
    elif call is not None and event.kind in (Kind.EXECUTED, Kind.FAILED):
        start = call.claimed_at
    elif call is None and run is not None and event.kind in (Kind.COMPLETED, Kind.RUN_FAILED, Kind.CANCELLED):
        start = run.created_at
    if start is None or event.created_at is None:
        return None
    return round((event.created_at - start).total_seconds(), 3)


def masked_arguments(event: AuditEvent):
    call = event.tool_call
    tool = registry.for_call(call) if call is not None else None
    arguments = (event.payload or {}).get("arguments")
    if tool is None or arguments is None:
        return None
    return tool.masked(arguments)


def fields(event: AuditEvent) -> dict:
    """The line's fields, the masked arguments last."""
    call, run = event.tool_call, event.run
    line = {
        "event": str(event.kind),
        "run_id": run.pk if run is not None else None,
        "call_id": call.pk if call is not None else None,
        "tool": call.tool_name if call is not None else None,
        "actor": event.actor_label,
        "outcome": outcome(event),
        "seconds": seconds(event),
        "audit_id": event.pk,
    }
    if event.kind in WITH_ARGUMENTS:
        line["arguments"] = masked_arguments(event)
    return {key: value for key, value in line.items() if value is not None}


def event_logged(event: AuditEvent) -> None:
    """Write this event's line (an observer: runs after the commit), unless INFO is off: the line is not built."""
    if event.kind in QUIET or not log.isEnabledFor(logging.INFO):
        return
    line = fields(event)
    text = " ".join(f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}" for key, value in line.items())
    log.info("%s", text, extra=line)
