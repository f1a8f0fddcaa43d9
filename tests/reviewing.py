"""Helpers for the reviewer-side tests: a proposed or pending call, a decision posted as a reviewer would."""

import json

from django.contrib.auth.models import Group
from django.urls import reverse

from agents import loop
from approvals import services
from approvals.models import PolicyRule, Run, ToolCall
from approvals.services import ProposedCall

REFUND_40 = "Order A-1001 arrived broken. Please refund $40."
REFUND_35 = "Order A-1002 arrived broken. Please refund $35."
WHICH = "I'm dana.smith@example.com, my item arrived broken, please refund it."  # the agent asks which order
NOTE_CALL = ("add_order_note", {"order_id": "A-1004", "text": "Customer called about the delivery."})
REFUND_CALL = ("issue_refund", {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"})


def pending_call(make_run, text: str = REFUND_40, **kwargs) -> ToolCall:
    run = make_run(text, **kwargs)
    return run.tool_calls.get(status=ToolCall.Status.PENDING)


def propose(run: Run, name: str, arguments: dict | str, call_id: str = "call_1") -> ToolCall:
    """The model proposes one call (arguments as JSON text when a str) in a new step, through the gate."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    calls = [ProposedCall(call_id=call_id, name=name, raw_arguments=raw)]
    services.step_record(run=run, content="I'll do it.", calls=calls)
    return ToolCall.objects.get(run=run, call_id=call_id)


def model_reply(run: Run, content: str, calls: list[ProposedCall]) -> None:
    """The model's reply to the run's next model turn, recorded as the loop records it (without a model): the
    read-only calls policy runs at once run before the step is stored."""
    run.refresh_from_db()
    assert services.run_begin_turn(run=run)
    transcript = list(run.messages.order_by("seq"))
    services.model_reply_record(run=run, turn=run.step_count, transcript=transcript, content=content, calls=calls)


def run_with(user, *calls: tuple[str, dict]) -> Run:
    """A run requested by this user whose model asked for these (tool, arguments) in one step, through the
    gate, without a model; what may run at once has run."""
    run = services.run_create(agent="support", request="Help the customer.", requested_by=user)
    proposed = [ProposedCall(f"call_{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls, start=1)]
    services.step_record(run=run, content="I'll do it.", calls=proposed)
    for call in run.tool_calls.filter(status=ToolCall.Status.APPROVED):
        services.toolcall_execute(call=call)
    return run


def approve_reply(run: Run, reviewer) -> Run:
    """Approve the draft the support agent's final answer waits as (its "Reply to the customer" checkpoint),
    and let the run finish with it."""
    call = run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT, status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    loop.advance(run.pk)
    run.refresh_from_db()
    return run


def call_url(call: ToolCall) -> str:
    return reverse("approvals:call", args=[call.pk])


ACTION_URLS = {
    "approve": "approvals:call_approve",
    "edit": "approvals:call_edit",
    "preview_edit": "approvals:call_changes",
    "reject": "approvals:call_reject",
    "respond": "approvals:call_respond",
    "claim": "approvals:call_claim",
    "release": "approvals:call_release",
}


def action_url(call: ToolCall, action: str) -> str:
    return reverse(ACTION_URLS[action], args=[call.pk])


def post(client, call: ToolCall, action: str, *, htmx: bool = False, **data):
    """What the call panel's forms post: to the action's URL, with the hash of the arguments shown."""
    data.setdefault("arguments_hash", call.review_hash)
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(action_url(call, action), data, headers=headers)


def decide(call: ToolCall, reviewer, verdict: str = "approve", **kwargs):
    """A decision through the service, bound to the arguments the reviewer was shown."""
    return services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, **kwargs
    )


def advance(call: ToolCall) -> ToolCall:
    loop.advance(call.run_id)
    call.refresh_from_db()
    return call


def senior_rule(**kwargs) -> PolicyRule:
    """The example from the brief: refunds above $500 are decided only by the group "senior"."""
    fields = {
        "name": "Refunds over $500: senior only",
        "tool_name": "issue_refund",
        "field": "amount",
        "operator": ">",
        "value": 500,
        "outcome": "review",
        "group": Group.objects.get(name="senior"),
        "order": 5,
    }
    return PolicyRule.objects.create(**{**fields, **kwargs})


def script_calls(model, *calls: tuple[str, dict], content: str = "I'll do these.") -> None:
    """Queue one model reply that asks for these tools in parallel."""
    model.script(
        {
            "content": content,
            "tool_calls": [
                {"id": f"call_{i}", "name": name, "arguments": json.dumps(arguments)}
                for i, (name, arguments) in enumerate(calls, start=1)
            ],
        }
    )
