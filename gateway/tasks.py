"""MCP's tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, protocol 2026-07-28) for reviewed calls.

A client that declares the extension on its tools/call (per-request capabilities) gets a task at once for a call
waiting for a reviewer, instead of progress notifications and then "still waiting" after the gateway's answer-after
time. It polls `tasks/get`: "working" while the call waits (the status message says for whom, and where), then
"completed" with the tool's result, the reviewer's rejection as a tool error, or an expiry. A poll that finds the call
approved runs it, once (the claim and its lease, as a waiting tools/call does). `tasks/cancel` withdraws a call
nobody has decided yet; a decided one goes on (cancellation is cooperative). Clients without the extension, and
the handshake-era protocol, keep the waiting tools/call.

A task id is the call, signed for its gateway (Django's signing): unguessable, bound to the gateway's identity,
valid across gateway restarts. No task state is kept but the call itself.
"""

from datetime import UTC, datetime

import mcp.types as types
from django.core import signing
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from approvals.models import ToolCall

from . import services
from .runtime import Runtime

EXTENSION = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021  # SEP-2663: Missing Required Client Capability
SALT = "reviewhub.gateway.mcp-task"
POLL_MS = 2000
WORKING: dict[str, str] = {
    ToolCall.Status.PENDING: "Waiting for a reviewer (call {call}, {link}).",
    ToolCall.Status.APPROVED: "Approved; running it (call {call}).",
    ToolCall.Status.EXECUTING: "Approved; running it (call {call}).",
    ToolCall.Status.OUTCOME_UNKNOWN: (
        "Its claim lapsed before the result came back (call {call}, {link}): a reviewer says whether it ran."
    ),
}


class TaskParams(types.RequestParams):
    task_id: str


def client_wants_tasks(ctx) -> bool:
    """The client declared the tasks extension (on this request, in the 2026-07-28 protocol)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities is not None and EXTENSION in (capabilities.extensions or {}))


def task_id(runtime: Runtime, call: ToolCall) -> str:
    return signing.dumps({"gateway": runtime.gateway.name, "call": call.pk}, salt=SALT, compress=True)


def call_id_of(runtime: Runtime, value: str) -> int:
    try:
        data = signing.loads(value, salt=SALT)
    except signing.BadSignature:
        data = None
    if not isinstance(data, dict) or data.get("gateway") != runtime.gateway.name:
        raise task_not_found()
    return int(data["call"])


def task_not_found() -> MCPError:
    """SEP-2663's answer to a task id that names no task of this gateway's (forged, another's, or purged)."""
    return MCPError(code=types.INVALID_PARAMS, message="Failed to retrieve task: Task not found")


def _stamp(moment: datetime | None) -> str:
    return (moment or datetime.now(UTC)).astimezone(UTC).isoformat().replace("+00:00", "Z")


def task_fields(runtime: Runtime, call: ToolCall, status: str, **fields) -> dict:
    return {
        "taskId": task_id(runtime, call),
        "status": status,
        "createdAt": _stamp(call.created_at),
        "lastUpdatedAt": _stamp(None),
        "ttlMs": None,
        "pollIntervalMs": POLL_MS,
        **fields,
    }


def created(runtime: Runtime, call: ToolCall) -> dict:
    """The tools/call answer: a task, working while the call waits for a reviewer."""
    message = WORKING[ToolCall.Status.PENDING].format(call=call.pk, link=services.call_link(call))
    return {"resultType": "task", **task_fields(runtime, call, "working", statusMessage=message)}
