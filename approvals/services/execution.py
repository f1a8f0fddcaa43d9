"""Running an approved call exactly once, exactly as approved, and recording what happened."""

import logging
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from approvals import audit, live, policy
from approvals.lib.hashing import args_hash
from approvals.lib.text import edit_summary
from approvals.policy import snapshot as policy_snapshot

from ..models import ToolCall
from ..planted import planted
from ..tools import Arguments, ArgumentsInvalid, Ask, Tool, ToolContext, registry
from .deadlines import set_deadline
from .decisions import counted_approvals, effective_group
from .leases import lease_renew, lease_retake, lease_until
from .questions import question_from_execution
from .renewals import Renewing
from .runnable import EXECUTABLE, runnable_calls
from .steps import run_tool_body
from .transcript import record_output

log = logging.getLogger(__name__)


def toolcall_claim(*, call: ToolCall) -> bool:
    """Take an approved call for execution, for one lease (services/leases.py). Exactly one worker wins.

    A call of an idempotent tool whose lease lapsed is taken again at once, with the same idempotency key;
    any other lapsed call is the sweep's: it becomes "outcome unknown", never run again silently.
    """
    planted.refuse(call)  # a practice call is never claimed (approvals/planted.py)
    return _take(call)


def _take(call: ToolCall) -> bool:
    """The claim itself: one UPDATE, the first statement of the block that records it (toolcall_execute)."""
    now = timezone.now()
    until = lease_until(now)
    fields = {"status": ToolCall.Status.EXECUTING, "claimed_at": now, "lease_expires_at": until}
    fresh = ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED)
    won = fresh.update(**fields)
    if not won:
        won = lease_retake(call=call, fields=fields, now=now)
    if won:
        call.status, call.claimed_at, call.lease_expires_at = ToolCall.Status.EXECUTING, now, until
    return bool(won)


@dataclass(frozen=True)
class Return:
    """Why an approved call goes back to the queue instead of running."""

    reason: str
    new_round: bool = True  # everyone reviews again; False keeps the approvals so far
    facts: dict | None = None
    changes: dict = field(default_factory=dict)
    outcome: policy.PolicyOutcome | None = None


def _policy_still_allows(call: ToolCall, tool: Tool, arguments: dict) -> Return | None:
    snapshot = policy_snapshot.current(stamp=getattr(call, "policy_stamp", None))  # read with the call
    outcome = policy.evaluate(tool, arguments, rules=list(snapshot.rules.get(tool.name, ())))
    if outcome.action == policy.FORBID:
        return Return(f"Policy now forbids this call ({outcome.reason}); it can only be rejected.", outcome=outcome)
    if outcome.action != policy.REVIEW:
        return None
    group_id = effective_group(call, outcome)
    have = len(counted_approvals(call, args_hash(arguments), group_id))
    if have >= outcome.required_approvals:
        return None
    who = f" from the group “{outcome.group_name}”" if outcome.group_id and group_id == outcome.group_id else ""
    return Return(
        f"Policy changed while the call waited ({outcome.reason}): it needs "
        f"{outcome.required_approvals} approval(s){who} and has {have}.",
        new_round=False,
        outcome=outcome,
    )


def _facts_still_hold(call: ToolCall, tool: Tool, args) -> Return | None:
    try:
        fresh = tool.fetch_facts(args)
    except Exception as exc:
        return Return(
            f"The facts could not be fetched again ({exc}).", facts={"error": f"facts could not be fetched: {exc}"}
        )
    seen = call.facts or {}
    changes = {
        name: {"before": seen.get(name), "after": fresh.get(name)}
        for name in tool.material_facts
        if seen.get(name) != fresh.get(name)
    }
    if not changes:
        return None
    listed = "; ".join(f"{name.replace('_', ' ')}: {c['before']} → {c['after']}" for name, c in changes.items())
    return Return(f"The facts changed since the call was reviewed ({listed}).", facts=fresh, changes=changes)


def _returned_fields(call: ToolCall, back: Return) -> dict:
    set_deadline(call=call, setting=policy_snapshot.tool_setting(call.tool_name), now=timezone.now())
    fields: dict[str, object] = {
        "status": ToolCall.Status.PENDING,
        "claimed_at": None,
        "returned_reason": back.reason,
        "changed_facts": back.changes,
        "expires_at": call.expires_at,
        "warn_at": call.warn_at,
        "warned_at": None,
        "reviewing_by": None,
        "reviewing_until": None,
    }
    if back.facts is not None:
        fields["facts"] = back.facts
    if back.outcome is not None and back.outcome.action == policy.REVIEW:
        fields["required_approvals"] = back.outcome.required_approvals
        fields["review_group_id"] = effective_group(call, back.outcome)
        fields["policy"] = back.outcome.as_dict()
    if back.new_round:
        fields["review_round"] = call.review_round + 1
    return fields


@transaction.atomic
def _return_to_queue(call: ToolCall, back: Return) -> None:
    fields = _returned_fields(call, back)
    if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED).update(**fields):
        return  # another worker took it meanwhile
    if not back.new_round:
        # The approvals stand, but the last one no longer settled the call.
        call.decisions.filter(round=call.review_round, final=True).update(final=False)
    payload = {"reason": back.reason, "changes": back.changes, "round": fields.get("review_round", call.review_round)}
    audit.record(audit.AuditEvent.Kind.RETURNED, tool_call=call, payload=payload)
    live.call_changed(call.pk)


def toolcall_execute(*, call: ToolCall, loaded: bool = False) -> bool:
    """Run an approved call exactly as approved, and record what happened.

    Just before running, policy is evaluated again and the facts are fetched
    again (reads only, before any lock): a call that policy now forbids or wants
    more approvals for, or whose material facts changed, does not run and goes
    back to the queue. Then the call is claimed and its executing event recorded
    together (one statement on PostgreSQL), and the tool's body runs. `loaded`: the call was just read by
    runnable_calls(), which leaves practice calls out; otherwise a practice call raises PracticeRefused
    (approvals/planted.py) and the call is read again here. Either way the claim makes sure that only one
    worker runs it.
    """
    if not loaded:
        planted.refuse(call)
    runnable = call if loaded else runnable_calls(pk=call.pk).first()
    return runnable is not None and _execute(runnable)


def _execute(call: ToolCall) -> bool:
    if not call.run.advancer.executes(call):
        return False  # a remote agent's call is executed by its agent, through the agent API's claim and report
    if call.kind not in EXECUTABLE:
        return False  # a model turn or a tool's question is settled by its decision, never executed
    retake = call.claimed_at is not None  # a call claimed before passed the checks before its worker died
    approved = _approved(call)
    if isinstance(approved, Approved) and not retake:
        back = _policy_still_allows(call, approved.tool, approved.arguments) or _facts_still_hold(
            call, approved.tool, approved.args
        )
        if back is not None:
            _return_to_queue(call, back)
            return False
    if not _claim_and_record(call, executing=isinstance(approved, Approved)):
        return False
    if isinstance(approved, str):
        return _finish(call, ToolCall.Status.FAILED, approved)
    context = ToolContext(call.idempotency_key, call.run_id, call.run.dry_run, retake)
    try:
        with Renewing(lambda: lease_renew(call_id=call.pk, claimed_at=call.claimed_at)):
            status, output = run_tool_body(call, approved.tool, approved.args, context)
    except Ask as ask:  # the tool asks a person: the call waits as a question (services/questions.py)
        status, output = ToolCall.Status.FAILED, question_from_execution(call, ask)
        if not output:
            return False
    if call.arguments is not None and approved.arguments != call.arguments:
        output = f"{edit_summary(call.arguments, approved.arguments)}\nResult: {output}"
    return _finish(call, status, output)


@dataclass(frozen=True)
class Approved:
    """What is about to run, matched with what was approved: the tool, the arguments and their parsed form."""

    tool: Tool
    arguments: dict
    args: Arguments


def _approved(call: ToolCall) -> Approved | str:
    """What would run, if it is what was approved; else why not (the call's output, for the model)."""
    tool, arguments = registry.for_call(call), call.approved_arguments
    decision = call.final_decision()
    # What runs must be what was approved: same tool, same argument hash.
    expected_hash = decision.arguments_hash if decision else call.arguments_hash
    if tool is None or arguments is None or args_hash(arguments) != expected_hash:
        return "Error: the approved call could not be matched; nothing was run."
    try:
        return Approved(tool, arguments, tool.parse(arguments))
    except ArgumentsInvalid as exc:
        return f"Error: the approved arguments are no longer valid: {exc.message()}"


# The claim as append_one()'s guard: the executing event is appended only if this worker took the call.
_CLAIM = (
    f"UPDATE {ToolCall._meta.db_table} SET status = %s, claimed_at = %s, lease_expires_at = %s"
    " WHERE id = %s AND status = %s RETURNING id"
)


def _claim_and_record(call: ToolCall, *, executing: bool) -> bool:
    """Claim the call and, when it is about to run, record so in the trail, before the tool's body: a first claim in
    one statement (on PostgreSQL; one transaction elsewhere: audit.record_many's `only_if`), any other in a block."""
    if not executing or call.status != ToolCall.Status.APPROVED:
        return _claim_in_block(call, executing=executing)
    now, adapt = timezone.now(), connection.ops.adapt_datetimefield_value
    until = lease_until(now)
    claim = [ToolCall.Status.EXECUTING, adapt(now), adapt(until), call.pk, ToolCall.Status.APPROVED]
    entry = audit.Entry(audit.AuditEvent.Kind.EXECUTING, call, payload=_executing(call))
    if not audit.record_many(call.run, [entry], only_if=(_CLAIM, claim)):
        return False  # another worker took it
    call.status, call.claimed_at, call.lease_expires_at = ToolCall.Status.EXECUTING, now, until
    return True


def _executing(call: ToolCall) -> dict:
    """What the executing event records: exactly what runs, under which key."""
    return {
        "arguments": call.approved_arguments,
        "arguments_hash": args_hash(call.approved_arguments),
        "idempotency_key": call.idempotency_key,
        "dry_run": call.run.dry_run,
    }


@transaction.atomic
def _claim_in_block(call: ToolCall, *, executing: bool) -> bool:
    """A claim taken again (an idempotent call whose lease lapsed), or one that records a failure instead of
    running: the claim and, when it runs, its event, in one transaction."""
    if not _take(call):  # toolcall_execute refused a practice call before this block
        return False
    if executing:
        audit.record(audit.AuditEvent.Kind.EXECUTING, tool_call=call, payload=_executing(call))
    return True


@transaction.atomic
def _finish(call: ToolCall, status: str, output: str) -> bool:
    ToolCall.objects.filter(pk=call.pk).update(status=status, executed_at=timezone.now(), lease_expires_at=None)
    kind = audit.AuditEvent.Kind.EXECUTED if status == ToolCall.Status.EXECUTED else audit.AuditEvent.Kind.FAILED
    payload = {
        "arguments": call.approved_arguments,
        "idempotency_key": call.idempotency_key,
        "output": output,
        "dry_run": call.run.dry_run,
    }
    audit.record(kind, tool_call=call, payload=payload)
    record_output(call=call, output=output)
    live.call_changed(call.pk)
    return True
