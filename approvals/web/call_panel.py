"""What one viewer sees of one call: the context of the call panel partial.

The queue, the call page, their htmx responses and the live push all render
approvals/partials/call_panel.html; everything in it that depends on the viewer
comes from panel_context() or from `user` (claim.html), so the push cannot
drift from the page, and approvals/live/fanout.py can render the panel once for all
viewers with the same viewer_key().
"""

from approvals.access import can_decide, can_settle
from approvals.kinds.checkpoint import stage_calls
from approvals.kinds.question import answer_fields, payload_table
from approvals.models import AuditEvent, Decision, ToolCall
from approvals.planted import planted
from approvals.policy.friction import friction_for, shown_token

PANEL_TEMPLATE = "approvals/partials/call_panel.html"


def panel_context(user, call: ToolCall, decision: Decision | None) -> dict:
    allowed, why = can_decide(user, call)
    context = {
        "call": call,
        "decision": decision,
        "can_decide": allowed and call.is_pending,
        "why_not": why,
        "decided_by_you": decision is not None and decision.reviewer_id == user.pk,
        "can_settle": call.status == ToolCall.Status.OUTCOME_UNKNOWN and can_settle(user, call)[0],
        **question_context(call),
    }
    if context["decided_by_you"] and not call.is_pending:  # a practice call: its reviewer is told what it was
        context["practice_feedback"] = planted.feedback(call.pk)
    if call.kind == ToolCall.Kind.CHECKPOINT:  # the run's calls this viewer may read: part of viewer_key
        context["stage_calls"] = stage_calls(user, call)
    if call.status == ToolCall.Status.APPROVED:
        context["not_claimed"] = not_claimed(call)
    if context["can_decide"] and (gate := friction_for(call, fresh=False)) is not None:  # shown: the decision reads it
        context |= {"friction": gate, "shown_token": shown_token(call)}
    return context


def not_claimed(call: ToolCall) -> dict | None:
    """The agent read this approval and did not claim it in time (remote/unclaimed.py): the flag's payload,
    unless the call was claimed since."""
    flags = AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.NOT_CLAIMED)
    if call.claimed_at is not None:
        flags = flags.filter(created_at__gt=call.claimed_at)
    return flags.order_by("-id").values_list("payload", flat=True).first()


def question_context(call: ToolCall, values: dict | None = None, errors: dict | None = None) -> dict:
    """A tool's question: the form generated from its schema (with what was posted and its errors), the payload."""
    if call.kind != ToolCall.Kind.QUESTION:
        return {}
    fields = answer_fields(call.question, values, errors)
    names = {field.name for field in fields} | {"reason"}
    other = [message for name, messages in (errors or {}).items() if name not in names for message in messages]
    return {"answer_fields": fields, "answer_errors": other, "payload": payload_table(call.question)}


def viewer_key(user, context: dict) -> str:
    """Viewers with equal keys get the same panel HTML: the viewer's part of the
    context, and whether the viewer is the one reviewing the call (claim.html)."""
    current = context["call"].current_reviewer
    shared = ("call", "decision", "user", "shown_token")  # the token says when the card was shown, to anyone
    mine = [(key, value) for key, value in context.items() if key not in shared]
    return repr((sorted(mine), current is not None and current.pk == user.pk))
