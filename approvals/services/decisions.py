"""Deciding a pending call: approve, edit, reject or respond. One transaction each.

Lock the call, check it is pending, that this reviewer may decide it and that the
arguments shown are the arguments under review, store the decision, resume on commit.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from approvals import audit, live, policy
from approvals.lib import storable
from approvals.lib.hashing import args_hash
from approvals.lib.text import sentence
from approvals.policy import friction

from ..access import can_decide, in_group
from ..models import Decision, ToolCall
from ..models.calls import facts_warning
from ..planted import planted
from ..tools import ArgumentsInvalid, Tool, registry
from .errors import (
    AlreadyDecided,
    DecisionError,
    EditInvalid,
    HighImpactRefused,
    NotAllowed,
    StaleView,
    WarningNotAcknowledged,
)
from .runs import request_resume
from .shadow import shadow_settle
from .shown import what_was_shown
from .transcript import record_output

UNCLAIM = {"reviewing_by": None, "reviewing_until": None}


def tool_for(call: ToolCall) -> Tool:
    """The registered tool of a call; a call whose tool is gone can only be rejected."""
    tool = registry.for_call(call)
    if tool is None:
        raise NotAllowed("This tool is no longer registered; it can only be rejected.")
    return tool


def effective_group(call: ToolCall, outcome: policy.PolicyOutcome) -> int | None:
    """The group that must decide: a group that policy names since the call was proposed wins;
    otherwise the call's own (which an escalation may have changed)."""
    if outcome.group_id and outcome.group_id != (call.policy or {}).get("group_id"):
        return outcome.group_id
    return call.review_group_id


def counted_approvals(call: ToolCall, arguments_hash: str, group_id: int | None) -> list[Decision]:
    """Approvals in this review round of exactly these arguments, by reviewers of the deciding group."""
    return [d for d in call.round_approvals(arguments_hash) if d.reviewer and in_group(d.reviewer, group_id)]


def edited_arguments(call: ToolCall, arguments: dict) -> dict:
    """A reviewer's edit, checked against the tool's schema and its own draft check: the arguments as they would run.

    An edit that the tool says cannot succeed is refused now, not approved to fail later.
    """
    tool = tool_for(call)
    try:
        args = tool.parse(arguments)
    except ArgumentsInvalid as exc:
        raise EditInvalid(exc.errors)
    problem = tool.draft_problem(args)
    if problem:
        raise EditInvalid({"__all__": [f"{tool.name} cannot run with these arguments: {problem}"]})
    return args.model_dump(mode="json")


def _storable_texts(**texts: str) -> None:
    """A reason or guidance the database cannot store is refused with a field error, never altered:
    it is what the agent reads and what the trail records, so it must be what the reviewer wrote."""
    errors = {name: [problem] for name, text in texts.items() if (problem := storable.text_problem(text))}
    if errors:
        raise EditInvalid(errors)


@dataclass
class _Approval:
    """What an approval or edit amounts to: the arguments, whether it settles the call, what it changes."""

    verdict: str
    arguments: dict
    count: int
    required: int
    changes: dict
    warning: str = ""  # what the facts warned, and the reviewer approved anyway

    @property
    def final(self) -> bool:
        return self.count >= self.required


def _approval(call: ToolCall, reviewer: User, verdict: str, arguments, anyway: bool, proof) -> _Approval:
    """Check an approval (or edit) against the tool's schema, the facts' warning and today's policy; count it."""
    tool = tool_for(call)
    decided = call.review_arguments
    if verdict == Decision.Verdict.EDIT:
        decided = edited_arguments(call, arguments)
        if decided == call.review_arguments:
            verdict = Decision.Verdict.APPROVE
    outcome = policy.evaluate(tool, decided)
    if outcome.action == policy.FORBID:
        raise NotAllowed(f"Policy forbids this call ({outcome.reason}); it can only be rejected.")
    group_id = effective_group(call, outcome)
    if not in_group(reviewer, group_id):
        raise NotAllowed(f"Only members of the group “{outcome.group_name}” may approve this ({outcome.reason}).")
    gate = friction.friction_for(call, decided, rule_says=outcome.high_impact, fresh=False)
    if gate is not None and (errors := friction.problems(gate, call, proof)):
        raise HighImpactRefused(errors)
    required = max(call.required_approvals, outcome.required_approvals if outcome.action == policy.REVIEW else 1)
    changes = {"approved_arguments": decided, "required_approvals": required, "review_group_id": group_id}
    if outcome.action == policy.REVIEW:
        changes["policy"] = outcome.as_dict()
    if decided != call.review_arguments:
        # The facts and description now describe the edited call; execution checks against these.
        changes.update(_describe(tool, decided))
    warning = facts_warning(changes["facts"]) if "facts" in changes else call.warning
    if warning and not anyway:
        raise WarningNotAcknowledged(warning)
    count = len(counted_approvals(call, args_hash(decided), group_id)) + 1
    return _Approval(verdict, decided, count, required, changes, warning)


def _describe(tool: Tool, arguments: dict) -> dict:
    """The description and facts of edited arguments. Facts that cannot be fetched hold the call at execution."""
    args = tool.parse(arguments)
    try:
        description = tool.render_description(args)
    except Exception as exc:
        description = f"{tool.name} (description unavailable: {exc})"
    try:
        facts = tool.fetch_facts(args)
    except Exception as exc:
        facts = {"error": f"facts could not be fetched: {exc}"}
    return {"facts": facts, "edited_description": description}


def _offered(call: ToolCall, verdict: str, guidance: str) -> None:
    """The tool offers this decision (a remote agent declares which of approve, edit, reject, respond it takes)."""
    if verdict not in (Decision.Verdict.REJECT, *Decision.APPROVING):
        return  # refused below as unknown
    if call.kind == ToolCall.Kind.QUESTION and verdict != Decision.Verdict.REJECT:
        raise NotAllowed("A question is answered (or declined with a reason), not approved.")
    tool = registry.for_call(call)
    offered = tool.decisions if tool is not None else ("reject",)
    wanted = "respond" if verdict == Decision.Verdict.REJECT and guidance else verdict
    if wanted in offered:
        return
    if wanted == "reject" and "respond" in offered:
        raise EditInvalid({"guidance": ["This tool's calls are rejected with guidance for the agent: write it."]})
    names = ", ".join(offered) or "none"
    raise NotAllowed(f"This tool does not take the decision “{wanted}”; it takes: {names}.")


def _locked_pending(call_id: int, reviewer: User, shown_hash: str) -> ToolCall:
    call = ToolCall.objects.select_for_update(of=("self",)).select_related("run", "review_group").get(pk=call_id)
    if call.status != ToolCall.Status.PENDING:
        raise AlreadyDecided(call, call.final_decision())
    allowed, why = can_decide(reviewer, call)
    if not allowed:
        raise NotAllowed(why)
    if shown_hash != call.review_hash:
        raise StaleView("This call changed since you opened it; reload to see the current version.")
    return call


def _store(call: ToolCall, approval: _Approval | None, **fields) -> Decision:
    """The decision row; the partial unique constraints make a second final decision impossible."""
    arguments = approval.arguments if approval else None
    try:
        with transaction.atomic():
            return Decision.objects.create(
                tool_call=call,
                arguments=arguments,
                arguments_hash=args_hash(arguments) if arguments is not None else "",
                round=call.review_round,
                final=approval.final if approval else True,
                **fields,
            )
    except IntegrityError:
        call.refresh_from_db()
        raise AlreadyDecided(call, call.final_decision())


def _audit(
    call: ToolCall, decision: Decision, approval: _Approval | None, shown_hash: str, channel: str, proof
) -> None:
    payload = {
        "verdict": decision.verdict,
        "arguments_shown_hash": shown_hash,
        "arguments": decision.arguments,
        "arguments_hash": decision.arguments_hash,
        "reason": decision.reason,
        "guidance": decision.guidance,
        "round": call.review_round,
        "final": decision.final,
        "approvals": f"{approval.count} of {approval.required}" if approval else "",
        "facts": approval.changes.get("facts") if approval else None,
        "warning_acknowledged": approval.warning if approval else "",
        "shown": what_was_shown(call=call, reviewer=decision.reviewer, channel=channel, proof=proof),
    }
    audit.record(audit.AuditEvent.Kind.DECIDED, tool_call=call, actor=decision.reviewer, payload=payload)


def _apply(call: ToolCall, decision: Decision, approval: _Approval | None) -> None:
    if planted.settle(call=call, decision=decision):  # a practice call: scored and told, never run (practice/)
        return
    calls = ToolCall.objects.filter(pk=call.pk)
    if approval is None:
        calls.update(status=ToolCall.Status.REJECTED, **UNCLAIM)
        verb = "Declined by reviewer (no answer)" if call.kind == ToolCall.Kind.QUESTION else "Rejected by reviewer"
        said = f"{sentence(decision.reason)} The reviewer's guidance follows." if decision.guidance else decision.reason
        record_output(call=call, output=f"{verb}: {said}")
    elif decision.final:
        calls.update(status=ToolCall.Status.APPROVED, **approval.changes, **UNCLAIM)
    else:
        calls.update(**approval.changes, **UNCLAIM)
    if decision.final:
        shadow_settle(call=call, verdict=decision.verdict)
        request_resume(call.run_id, approved=approval is not None, decided=call.pk)
    live.call_changed(call.pk)


def _checked(call: ToolCall, reviewer, verdict: str, arguments, anyway: bool, proof, *, reason: str, guidance: str):
    """What the decision amounts to, once checked: an approval (or edit) to count, None for a rejection."""
    if call.kind == ToolCall.Kind.TURN:
        raise NotAllowed("A model turn is decided with Continue, Add a note or Write the reply.")
    _offered(call, verdict, guidance)
    if verdict == Decision.Verdict.REJECT:
        if not reason:
            raise EditInvalid({"reason": ["A reason is required to reject; the agent will read it."]})
        return None
    if verdict in Decision.APPROVING:
        return _approval(call, reviewer, verdict, arguments, anyway, proof)
    raise DecisionError(f"Unknown decision {verdict!r}.")


def toolcall_decide(
    *,
    call_id: int,
    reviewer: User,
    verdict: str,
    shown_hash: str,
    arguments: dict | None = None,
    reason: str = "",
    guidance: str = "",
    approve_anyway: bool = False,
    channel: str = "api",
    proof: friction.Proof | None = None,
) -> Decision:
    """Approve, edit or reject a pending call: lock, check, store, resume on commit.

    A call whose facts carry a warning is approved only with `approve_anyway`:
    what the reviewer was warned about is then on record in the trail.

    A call that needs N approvals stays pending until N different reviewers of
    its group approve the same arguments; the Nth approval is the final decision.
    A reject always ends it. Guidance is shown to the model after the step's outputs.
    `channel`: how the reviewer chose (services/shown.py's CHANNELS), for the trail. `proof`: what the card
    of a high-impact call sends with an approval (approvals/policy/friction.py); without it such a call is refused.
    """
    reason, guidance = (reason or "").strip(), (guidance or "").strip()
    _storable_texts(reason=reason, guidance=guidance)
    with transaction.atomic():
        call = _locked_pending(call_id, reviewer, shown_hash)
        approval = _checked(call, reviewer, verdict, arguments, approve_anyway, proof, reason=reason, guidance=guidance)
        verdict = approval.verdict if approval else verdict
        decision = _store(call, approval, reviewer=reviewer, verdict=verdict, reason=reason, guidance=guidance)
        _audit(call, decision, approval, shown_hash, channel, proof)
        _apply(call, decision, approval)
    return decision


def toolcall_respond(
    *, call_id: int, reviewer: User, shown_hash: str, reason: str = "", guidance: str, channel: str = "api"
) -> Decision:
    """Reject a call and tell the agent what to do instead; it reads the guidance next."""
    if not (guidance or "").strip():
        raise EditInvalid({"guidance": ["Write what the agent should do instead; it reads this next."]})
    return toolcall_decide(
        call_id=call_id,
        reviewer=reviewer,
        verdict=Decision.Verdict.REJECT,
        shown_hash=shown_hash,
        reason=reason,
        guidance=guidance,
        channel=channel,
    )


def toolcall_approve_many(*, reviewer: User, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Approve several calls, each in its own decision bound to its own id and shown hash.

    Returns, per call, "" when it was approved (or counted towards its approvals), else why not.
    """
    results = []
    for call_id, shown_hash in items:
        try:
            toolcall_decide(
                call_id=call_id,
                reviewer=reviewer,
                verdict=Decision.Verdict.APPROVE,
                shown_hash=shown_hash,
                channel="batch",
            )
            results.append((call_id, ""))
        except ToolCall.DoesNotExist:
            results.append((call_id, "There is no such call."))
        except DecisionError as exc:
            results.append((call_id, str(exc)))
    return results
