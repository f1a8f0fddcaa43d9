"""A remote agent asks for a model turn to be reviewed before its model answers (docs/api.md, "Model turns").

It sends the transcript its model would see and that transcript's SHA-256; ReviewHub checks the hash is the
transcript's, so what the reviewer reads is what the hash binds. The reviewer continues, adds a note or writes
the reply (approvals.services.turn_decide); the agent hears of it by long-poll and webhook and applies it.
"""

from django.db import transaction

from approvals import services
from approvals.lib.hashing import args_hash, canonical_json
from approvals.models import ToolCall

from ..errors import Invalid
from ..models import RemoteAgent
from .calls import _existing, _thread_run, retried_once, stored

ROLES = ("system", "user", "assistant", "tool")


def _message_problem(message) -> str:
    if not isinstance(message, dict):
        return "Each message is an object (OpenAI chat format)."
    if message.get("role") not in ROLES:
        return f"role must be one of {', '.join(ROLES)}."
    if not isinstance(message.get("content", ""), str | None):
        return "content is a string (or null)."
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("function", {}), dict) for c in calls
    ):
        return "tool_calls is a list of objects, each with a function object."
    return ""


def _checked(proposal: dict) -> list[dict]:
    messages = proposal["messages"]
    errors = {f"messages.{i}": [problem] for i, m in enumerate(messages) if (problem := _message_problem(m))}
    if errors:
        first = next(iter(errors))
        raise Invalid(f"{first}: {errors[first][0]}", errors)
    if args_hash(messages) != proposal["transcript_sha256"]:
        problem = "Not the SHA-256 of these messages' canonical JSON (keys sorted, no spaces, UTF-8)."
        raise Invalid(f"transcript_sha256: {problem}", {"transcript_sha256": [problem]})
    return messages


@retried_once
@transaction.atomic
def turn_propose(*, agent: RemoteAgent, proposal: dict) -> tuple[ToolCall, bool]:
    """Ask for a review of turn `step` (thread_id, step, messages, transcript_sha256, user_request,
    idempotency_key), in one transaction. Returns the held turn and whether it is new; the same key and body
    again: the same turn."""
    request_hash = args_hash(canonical_json(proposal))
    existing = _existing(agent, proposal["idempotency_key"], request_hash)
    if existing is not None:
        return existing, False
    messages = _checked(proposal)
    run, request = _thread_run(agent, proposal["thread_id"], proposal["user_request"])
    opening = run.pk is None
    fields = {"user_request": proposal["user_request"]} if proposal["user_request"] else {}
    call = services.turn_request(run=run, step=proposal["step"], transcript=messages, request=request, fields=fields)
    return stored(call, agent=agent, tool=None, proposal=proposal, request_hash=request_hash, opened=opening), True
