"""A remote agent's call as the API and the webhooks show it (docs/api.md, "The call")."""

from django.conf import settings
from django.urls import reverse

from approvals.models import Decision, ToolCall

from .keys import execution_key

APPROVED = (ToolCall.Status.APPROVED, ToolCall.Status.EXECUTING, ToolCall.Status.EXECUTED, ToolCall.Status.FAILED)


def _changes(call: ToolCall) -> list[dict]:
    return [{"field": c["name"], "before": c["before"], "after": c["after"]} for c in call.changes]


def _verdict(decision: Decision) -> str:
    if decision.verdict == Decision.Verdict.REJECT and decision.guidance:
        return "respond"
    return decision.verdict


def decision_json(call: ToolCall) -> dict | None:
    decision = call.final_decision()
    # A question is answered, never executed: no arguments to run, no execution key.
    approved = call.status in APPROVED and call.approved_arguments is not None and call.kind != ToolCall.Kind.QUESTION
    if decision is None and not approved:
        return None
    result = {
        "verdict": _verdict(decision) if decision else "approve",
        "arguments": call.approved_arguments if approved else None,
        "changes": _changes(call) if approved else [],
        "reason": decision.reason if decision else "",
        "guidance": decision.guidance if decision else "",
        "reviewer": decision.reviewer.get_username() if decision and decision.reviewer else None,
        "decided_at": (decision.created_at if decision else call.created_at).isoformat(),
        "execution_key": execution_key(call) if approved else None,
        "answer": decision.arguments if decision and decision.verdict == Decision.Verdict.ANSWER else None,
    }
    return result


def result_json(call: ToolCall) -> dict | None:
    """What the agent reported; for a call whose outcome was unknown, what the reviewer who settled it recorded."""
    remote = call.remote
    if remote.reported_at is None:
        if call.status in (ToolCall.Status.EXECUTED, ToolCall.Status.FAILED) and call.output_recorded:
            when = (call.executed_at or call.created_at).isoformat()
            return {"ok": call.status == ToolCall.Status.EXECUTED, "output": call.output, "reported_at": when}
        return None
    return {"ok": remote.reported_ok, "output": remote.reported_output, "reported_at": remote.reported_at.isoformat()}


def call_url(call: ToolCall | int, request=None) -> str:
    """The call's page for its reviewers (a call or its id), absolute: from the request, else the public URL."""
    path = reverse("approvals:call", args=[call if isinstance(call, int) else call.pk])
    if request is not None:
        return request.build_absolute_uri(path)
    return settings.REVIEWHUB_PUBLIC_URL.rstrip("/") + path


def call_json(call: ToolCall, request=None) -> dict:
    remote = call.remote
    return {
        "id": call.pk,
        "kind": call.kind,
        "thread_id": remote.thread_id,
        "tool": remote.tool.name if remote.tool else call.tool_name,  # a model turn has no declared tool
        "tool_version": remote.tool.version if remote.tool else 0,
        "arguments": call.arguments,
        "revision": call.revision,
        "revision_of": call.revision_of_id,
        "status": call.status,
        "decision": decision_json(call),
        "result": result_json(call),
        "created_at": call.created_at.isoformat(),
        "expires_at": call.expires_at.isoformat() if call.expires_at else None,
        "lease_expires_at": call.lease_expires_at.isoformat() if call.lease_expires_at else None,
        "url": call_url(call, request),
        "question": call.question if call.kind == ToolCall.Kind.QUESTION else None,
    }
