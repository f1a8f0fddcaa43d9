"""The gate: every tool call the model proposes is refused, run at once, or held for a person.

Fails closed: an unknown tool, arguments that fail the schema, a draft check that
fails or raises, a policy that forbids, an id or a name the record cannot hold —
refused with a clear output the model reads; facts that cannot be fetched — held
for review, never run.
"""

from dataclasses import dataclass, field, replace

from django.utils import timezone

from approvals import policy
from approvals.kinds import revision as revisions
from approvals.lib import storable
from approvals.lib.hashing import args_hash
from approvals.policy import snapshot as policy_snapshot

from ..models import AuditEvent, Message, Run, Tier, ToolCall
from ..tools import CHECKPOINT, Arguments, ArgumentsInvalid, Ask, Tool, ToolContext, registry
from .deadlines import set_deadline
from .questions import question_from_gate, question_from_proposal
from .steps import Gated, run_tool_body, step_store


@dataclass(frozen=True)
class ProposedCall:
    """One tool call as the model sent it: id, name, and the raw JSON argument string
    (or, of kind checkpoint, a stage the loop holds: see agents/checkpoints.py).

    A proposal from outside the loop (a remote agent's) may bring besides: the tool its source resolved already
    (`tool`, so the gate does not look it up again), columns known when it is proposed (`fields`: the agent's
    facts, its user's request) and a question it asks (`question`: it then waits as a question whatever its tier).
    """

    call_id: str
    name: str
    raw_arguments: str
    kind: str = ToolCall.Kind.CALL
    tool: Tool | None = None
    fields: dict = field(default_factory=dict)
    question: dict | None = None


class _Refused(Exception):
    def __init__(self, status: str, kind: str, output: str):
        self.status, self.kind, self.output = status, kind, output


ID_LENGTH = ToolCall.CALL_ID_LENGTH
NAME_LENGTH = ToolCall.TOOL_NAME_LENGTH


def step_record(
    *,
    run: Run,
    content: str,
    calls: list[ProposedCall],
    request: str = "",
    ids_unique: bool = False,
    settles_run: bool = False,
) -> Message:
    """Store a step proposed for the run from outside the model loop (a remote or AG-UI agent, a checkpoint, a
    practice call): the message and each of its calls through the gate, in one transaction.

    Policy, descriptions and facts are worked out before it, outside any lock. Nothing runs here: calls policy
    approves (read-only ones too) are executed after the commit, claimed one by one, by whoever advances the run.
    An unsaved run (services.run_open) is stored with the step. `request`: the user's new request, appended
    before the step. `ids_unique`: the caller made every call id itself, unique, so the run's ids are not read.
    `settles_run`: the caller advances the run (a remote agent): it waits while a call of the step is pending,
    else it runs. The stored calls are `message.step_calls`.
    """
    used: set[str] | None = set() if ids_unique or run.pk is None else None
    message = _record(run=run, content=content, calls=calls, turn=None, used=used, request=request, settles=settles_run)
    assert message is not None  # only a model's reply, stored while its turn lasts, can be refused (step_store)
    return message


def model_reply_record(
    *, run: Run, turn: int, transcript: list[Message], content: str, calls: list[ProposedCall]
) -> Message | None:
    """Store the model's reply to the run's model `turn` (agents/loop.py) as one step, in one transaction.

    As step_record(), and besides: the read-only calls policy runs at once are run before the transaction (they
    change nothing); a reply without calls completes the run; a step whose every call has an output claims the
    next model turn in the same commit. Only while `turn` is still the caller's: a turn the sweep gave to another
    worker after its lease ran out, or a run cancelled meanwhile, records nothing and returns None. `transcript`
    is what the model read (for the next sequence number and the ids in use).
    """
    used = {c["id"] for m in transcript for c in m.tool_calls}
    next_seq = transcript[-1].seq + 1
    return _record(run=run, content=content, calls=calls, turn=turn, used=used, next_seq=next_seq)


def _record(
    *,
    run: Run,
    content: str,
    calls: list[ProposedCall],
    turn: int | None,
    used: set[str] | None,
    next_seq: int | None = None,
    request: str = "",
    settles: bool = False,
) -> Message | None:
    proposals = _storable_calls(run, calls, used)
    rules = policy.rules_for({p.name for p, _ in proposals})
    reasoning = storable.escape(content)
    gated = [_gate(run, reasoning, proposed, problem, rules) for proposed, problem in proposals]
    for item in gated if turn is not None else ():  # the model's reply (model_reply_record)
        if item.call.status == ToolCall.Status.APPROVED and item.tool is not None and item.tool.tier == Tier.READ_ONLY:
            _run_now(run, item, item.tool)
    for item, (proposed, _) in zip(gated, proposals, strict=True):
        if proposed.question and item.call.status not in (ToolCall.Status.FORBIDDEN, ToolCall.Status.INVALID):
            question_from_proposal(item, proposed.question)
    return step_store(
        run=run, turn=turn, content=reasoning, gated=gated, next_seq=next_seq, request=request, settles=settles
    )


def _storable_calls(run: Run, calls: list[ProposedCall], used: set[str] | None) -> list[tuple[ProposedCall, str]]:
    """Each call as the record can hold it, and why it must be refused ("" when it need not).

    An id or a name the columns cannot take (too long, a NUL character, a lone surrogate)
    is stored escaped and cut short, for display and audit, and the call is refused. Ids
    are unique in a run, since decisions and outputs bind to them: a repeated one is
    refused too, under an id made unique, so the transcript stays valid for the model.
    """
    if used is None:
        used = set(run.tool_calls.values_list("call_id", flat=True))
    result = []
    for proposed in calls:
        call_id, problem = _storable_id(proposed.call_id, used)
        used.add(call_id)
        problem = problem or _column_problem("tool name", proposed.name, NAME_LENGTH)
        name = storable.escape(proposed.name, limit=NAME_LENGTH)
        raw = storable.escape(proposed.raw_arguments)
        result.append((replace(proposed, call_id=call_id, name=name, raw_arguments=raw), problem))
    return result


def _storable_id(call_id: str, used: set[str]) -> tuple[str, str]:
    problem = _column_problem("id", call_id, ID_LENGTH) if call_id else "it has no id"
    safe = base = storable.escape(call_id, limit=ID_LENGTH) or "call"
    if safe in used and not problem:
        problem = f"its id {call_id!r} is already used in this run; each call needs an id of its own"
    copy = 1
    while safe in used:
        copy += 1
        safe = f"{base[: ID_LENGTH - len(str(copy)) - 1]}~{copy}"
    return safe, problem


def _column_problem(what: str, text: str, limit: int) -> str:
    if len(text) > limit:
        return f"its {what} is longer than {limit} characters"
    problem = storable.text_problem(text)
    return f"its {what} {problem[0].lower()}{problem[1:].rstrip('.')}" if problem else ""


def _gate(run: Run, reasoning: str, proposed: ProposedCall, problem: str, rules: dict) -> Gated:
    call = ToolCall(
        run=run,
        call_id=proposed.call_id,
        kind=proposed.kind,
        tool_name=proposed.name,
        raw_arguments=proposed.raw_arguments,
        reasoning=reasoning,
        user_request=run.request,
    )
    for name, value in proposed.fields.items():
        setattr(call, name, value)
    try:
        if problem:
            raise _Refused(ToolCall.Status.INVALID, "invalid", f"Error: this tool call was not run: {problem}.")
        tool, args, arguments = _admit(call, proposed.tool)
        outcome = _decide_policy(call, tool, arguments, rules[tool.name])
    except _Refused as refused:
        return _refuse(call, refused)
    outcome = _describe_or_hold(call, tool, args, outcome)
    shadow = policy.shadow_outcomes(tool, arguments, rules=rules[tool.name])
    if outcome.action == policy.RUN:
        call.approved_arguments = call.arguments
        return _proposal(call, tool, args, shadow, ToolCall.Status.APPROVED, AuditEvent.Kind.AUTO_RUN)
    call.required_approvals = outcome.required_approvals
    call.review_group_id = outcome.group_id
    # The setting from the snapshot the step's rules came from (read again if that was over a second ago).
    set_deadline(call=call, setting=policy_snapshot.tool_setting(tool.name, fresh=False), now=timezone.now())
    extra = {"arguments_hash": call.arguments_hash, "reasoning": call.reasoning, "expires_at": call.expires_at}
    if run.pk is not None:  # the same tool again after a reviewer sent it back: its next round (a new run has none)
        extra |= revisions.link_revision(call)
    return _proposal(call, tool, args, shadow, ToolCall.Status.PENDING, AuditEvent.Kind.PROPOSED, **extra)


def _admit(call: ToolCall, known: Tool | None = None) -> tuple[Tool, Arguments, dict]:
    """The tool exists for the run's agent, may be offered, and its arguments pass the schema and the draft check.

    A run advanced elsewhere may get its tools from its advancer (a remote agent's declarations, or `known`: the
    declaration its proposal was checked against), never ReviewHub's."""
    if call.run.advancer.tool_for_call is not None:
        tool, available = known or registry.for_call(call), ""
    else:  # a tool the run's agent may not call is unknown to it
        tool = registry.get(call.tool_name, agent=call.run.agent)
        available = " Available tools: " + ", ".join(t.name for t in registry.offered(agent=call.run.agent)) + "."
    if tool is not None and (tool.kind == CHECKPOINT) != (call.kind == ToolCall.Kind.CHECKPOINT):
        tool = None  # a checkpoint is held by the loop, never called by the model
    if tool is None:
        output = f"Error: there is no tool named {call.tool_name!r}.{available}"
        raise _Refused(ToolCall.Status.INVALID, "invalid", output)
    call.tier, call.resolved_tool = tool.tier, tool  # registry.for_call(call) reads no declaration again
    if tool.tier == Tier.FORBIDDEN:
        raise _Refused(ToolCall.Status.FORBIDDEN, "forbidden", f"Error: {tool.name} is not allowed. Nothing was done.")
    try:
        args = tool.parse(call.raw_arguments)
    except ArgumentsInvalid as exc:
        output = f"Error: invalid arguments for {tool.name}: {exc.message()}"
        raise _Refused(ToolCall.Status.INVALID, "invalid", output)
    call.arguments = arguments = args.model_dump(mode="json")
    call.arguments_hash = args_hash(arguments)
    problem = tool.draft_problem(args)
    if problem:
        raise _Refused(ToolCall.Status.INVALID, "invalid", f"Error: {tool.name} was not run: {problem}")
    return tool, args, arguments


def _decide_policy(call: ToolCall, tool: Tool, arguments: dict, rules: list) -> policy.PolicyOutcome:
    outcome = policy.evaluate(tool, arguments, rules=rules)
    call.policy = outcome.as_dict()
    if outcome.action == policy.FORBID:
        output = f"Error: {tool.name} is not allowed here ({outcome.reason}). Nothing was done."
        raise _Refused(ToolCall.Status.FORBIDDEN, "forbidden", output)
    return outcome


def _describe_or_hold(call: ToolCall, tool: Tool, args, outcome: policy.PolicyOutcome) -> policy.PolicyOutcome:
    """Our description and the facts, by code. Without trustworthy facts nobody may skip review."""
    try:
        call.description = tool.render_description(args)
        call.facts = tool.fetch_facts(args)
        return outcome
    except Exception as exc:
        call.description = call.description or f"{tool.name} (description unavailable: {exc})"
        call.facts = {"error": f"facts could not be fetched: {exc}"}
        held = replace(outcome, action=policy.REVIEW, reason=f"facts could not be fetched ({exc}); held for review")
        call.policy = held.as_dict()
        return held


def _proposal(call: ToolCall, tool: Tool, args, shadow: list, status: str, kind: str, **extra) -> Gated:
    call.status = status
    payload = {
        "tool": tool.name,
        "arguments": call.arguments,
        "description": call.description,
        "facts": call.facts,
        "policy": call.policy,
        "shadow": [{"rule": rule.pk, "name": rule.name, "outcome": outcome} for rule, outcome in shadow],
        **extra,
    }
    return Gated(call, kind, payload, tool=tool, args=args, shadow=shadow)


def _refuse(call: ToolCall, refused: _Refused) -> Gated:
    call.status, call.output, call.output_recorded = refused.status, refused.output, True
    payload = {"tool": call.tool_name, "raw_arguments": call.raw_arguments, "output": refused.output}
    return Gated(call, refused.kind, payload)


def _run_now(run: Run, item: Gated, tool: Tool) -> None:
    """Run a read-only call that policy lets through, before the step's transaction: it changes nothing.

    Its key is the run's and the model's call id (the call has no row yet); the trail records it.
    """
    call = item.call
    key = f"run-{run.public_id}-{call.call_id}"
    try:
        status, output = run_tool_body(call, tool, item.args, ToolContext(key, run.pk, run.dry_run))
    except Ask as ask:  # the tool asks a person: the call waits as a question (services/questions.py)
        status, output = ToolCall.Status.FAILED, question_from_gate(item, ask)
        if not output:
            return
    call.status, call.output, call.output_recorded = status, output, True
    call.claimed_at = call.executed_at = timezone.now()
    item.ran_with_key = key
