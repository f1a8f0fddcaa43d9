"""Everything that writes the record: one function per action, each atomic."""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from . import audit, live, policy
from .access import can_decide, is_reviewer
from .models import Decision, Message, Run, Tier, ToolCall, args_hash
from .tools import ArgumentsInvalid, ToolContext, ToolError, registry

log = logging.getLogger(__name__)


class DecisionError(Exception):
    status = 400


class AlreadyDecided(DecisionError):
    status = 409

    def __init__(self, call: ToolCall, decision: Decision | None):
        self.call = call
        self.decision = decision
        if decision is not None:
            when = timezone.localtime(decision.created_at).strftime("%Y-%m-%d %H:%M:%S %Z")
            super().__init__(f"Already {decision.get_verdict_display().lower()} by {decision.reviewer_label} at {when}.")
        else:
            super().__init__(f"This call is no longer waiting for review (it is {call.get_status_display().lower()}).")


class NotAllowed(DecisionError):
    status = 403


class StaleView(DecisionError):
    status = 409


class EditInvalid(DecisionError):
    status = 400

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("The edited arguments are not valid.")


def request_resume(run_id: int) -> None:
    """Ask whoever advances runs to take this one further, once the transaction commits."""
    resume = import_string(settings.REVIEWHUB_RESUME)
    transaction.on_commit(lambda: resume(run_id))


# --- runs and transcript ----------------------------------------------------------


@transaction.atomic
def run_create(*, agent: str, request: str, requested_by=None, system_prompt: str = "", dry_run: bool = False) -> Run:
    run = Run.objects.create(
        agent=agent, request=request, requested_by=requested_by, dry_run=dry_run, max_steps=settings.AGENT_MAX_STEPS
    )
    if system_prompt:
        message_append(run, role=Message.Role.SYSTEM, content=system_prompt)
    message_append(run, role=Message.Role.USER, content=request)
    audit.record(
        audit.AuditEvent.Kind.RUN_STARTED,
        run=run,
        actor=requested_by,
        payload={"agent": agent, "request": request, "dry_run": dry_run},
    )
    live.run_changed(run.pk)
    request_resume(run.pk)
    return run


def message_append(run: Run, *, role: str, content: str = "", tool_calls=None, tool_call_id: str = "") -> Message:
    """Append a transcript row; the run row is locked so sequence numbers never collide."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).first()
        last = run.messages.aggregate(m=Max("seq"))["m"]
        message = Message.objects.create(
            run=run,
            seq=0 if last is None else last + 1,
            role=role,
            content=content or "",
            tool_calls=tool_calls or [],
            tool_call_id=tool_call_id,
        )
    live.run_changed(run.pk)
    return message


def run_set_status(run: Run, status: str, *, error: str = "") -> None:
    fields = {"status": status, "updated_at": timezone.now(), "thinking": False}
    if status in (Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.CANCELLED):
        fields["finished_at"] = timezone.now()
    if error or status != Run.Status.FAILED:
        fields["last_error"] = error
    Run.objects.filter(pk=run.pk).update(**fields)
    for key, value in fields.items():
        setattr(run, key, value)
    live.run_changed(run.pk)


TURN_LEASE = timedelta(minutes=15)


def run_begin_turn(run: Run) -> bool:
    """Claim the next model turn. Only one worker wins; returns whether it was this one.

    A turn left "thinking" by a worker that died is taken again after the lease.
    """
    idle = Q(thinking=False) | Q(updated_at__lt=timezone.now() - TURN_LEASE)
    won = Run.objects.filter(idle, pk=run.pk, status__in=Run.ACTIVE, step_count=run.step_count).update(
        status=Run.Status.RUNNING, step_count=F("step_count") + 1, thinking=True, updated_at=timezone.now()
    )
    if won:
        run.refresh_from_db()
        live.run_changed(run.pk)
    return bool(won)


def run_resumed(run: Run) -> None:
    audit.record(audit.AuditEvent.Kind.RESUMED, run=run, payload={"step": run.step_count})


@transaction.atomic
def run_fail(run: Run, error: str) -> None:
    run_set_status(run, Run.Status.FAILED, error=error)
    audit.record(audit.AuditEvent.Kind.RUN_FAILED, run=run, payload={"error": error})


@transaction.atomic
def run_complete(run: Run) -> None:
    run_set_status(run, Run.Status.COMPLETED)
    audit.record(audit.AuditEvent.Kind.COMPLETED, run=run, payload={"steps": run.step_count})


@transaction.atomic
def run_retry(*, run: Run, user) -> None:
    """Put a failed run back in the queue from where it stopped."""
    updated = Run.objects.filter(pk=run.pk, status=Run.Status.FAILED).update(
        status=Run.Status.QUEUED, thinking=False, finished_at=None, max_steps=F("max_steps") + 1
    )
    if updated:
        audit.record(audit.AuditEvent.Kind.RESUMED, run=run, actor=user, payload={"retry": True})
        live.run_changed(run.pk)
        request_resume(run.pk)


@transaction.atomic
def run_cancel(*, run: Run, user) -> None:
    updated = Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(
        status=Run.Status.CANCELLED, thinking=False, finished_at=timezone.now()
    )
    if updated:
        for call in run.tool_calls.filter(status=ToolCall.Status.PENDING):
            ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.CANCELLED)
            live.call_changed(call.pk)
        audit.record(audit.AuditEvent.Kind.CANCELLED, run=run, actor=user)
        live.run_changed(run.pk)


# --- the gate ------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposedCall:
    """One tool call as the model sent it: id, name, and the raw JSON argument string."""

    call_id: str
    name: str
    raw_arguments: str


@transaction.atomic
def step_record(run: Run, *, content: str, calls: list[ProposedCall]) -> Message:
    """Store the assistant's message and put each of its tool calls through the gate."""
    Run.objects.filter(pk=run.pk).update(thinking=False, updated_at=timezone.now())
    message = message_append(
        run,
        role=Message.Role.ASSISTANT,
        content=content,
        tool_calls=[
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
            for c in calls
        ],
    )
    for proposed in calls:
        _gate(run, message, proposed)
    return message


def _gate(run: Run, message: Message, proposed: ProposedCall) -> ToolCall:
    call = ToolCall(
        run=run,
        message=message,
        call_id=proposed.call_id,
        tool_name=proposed.name,
        raw_arguments=proposed.raw_arguments,
        reasoning=message.content,
        user_request=run.request,
    )
    tool = registry.get(proposed.name)
    if tool is None:
        call.status = ToolCall.Status.INVALID
        known = ", ".join(t.name for t in registry.all() if t.tier != Tier.FORBIDDEN)
        return _refuse(call, "invalid", f"Error: there is no tool named {proposed.name!r}. Available tools: {known}.")
    call.tier = tool.tier
    if tool.tier == Tier.FORBIDDEN:
        call.status = ToolCall.Status.FORBIDDEN
        return _refuse(call, "forbidden", f"Error: {proposed.name} is not allowed. Nothing was done.")
    try:
        args = tool.parse(proposed.raw_arguments)
    except ArgumentsInvalid as exc:
        call.status = ToolCall.Status.INVALID
        return _refuse(call, "invalid", f"Error: invalid arguments for {tool.name}: {exc.message()}")
    call.arguments = args.model_dump(mode="json")
    call.arguments_hash = args_hash(call.arguments)
    try:
        problem = tool.check(args) if tool.check else None
    except Exception as exc:
        problem = f"the draft check could not run ({exc})"
    if problem:
        call.status = ToolCall.Status.INVALID
        return _refuse(call, "invalid", f"Error: {tool.name} was not run: {problem}")

    outcome = policy.evaluate(tool, call.arguments)
    call.policy = outcome.as_dict()
    if outcome.action == policy.FORBID:
        call.status = ToolCall.Status.FORBIDDEN
        return _refuse(call, "forbidden", f"Error: {tool.name} is not allowed here ({outcome.reason}). Nothing was done.")
    try:
        call.description = tool.render_description(args)
        call.facts = tool.fetch_facts(args)
    except Exception as exc:
        # Without trustworthy facts nobody may skip review.
        call.description = call.description or f"{tool.name} (description unavailable: {exc})"
        call.facts = {"error": f"facts could not be fetched: {exc}"}
        outcome = policy.PolicyOutcome(policy.REVIEW, f"facts could not be fetched ({exc}); held for review")
        call.policy = outcome.as_dict()
    if outcome.action == policy.RUN:
        call.status = ToolCall.Status.APPROVED
        call.approved_arguments = call.arguments
        call.save()
        audit.record(
            audit.AuditEvent.Kind.AUTO_RUN,
            tool_call=call,
            payload={
                "tool": tool.name,
                "arguments": call.arguments,
                "description": call.description,
                "policy": call.policy,
                "facts": call.facts,
            },
        )
        return call
    call.status = ToolCall.Status.PENDING
    call.required_approvals = outcome.required_approvals
    call.expires_at = timezone.now() + timedelta(seconds=settings.REVIEW_EXPIRY_SECONDS)
    call.save()
    audit.record(
        audit.AuditEvent.Kind.PROPOSED,
        tool_call=call,
        payload={
            "tool": tool.name,
            "arguments": call.arguments,
            "arguments_hash": call.arguments_hash,
            "description": call.description,
            "facts": call.facts,
            "policy": call.policy,
            "reasoning": call.reasoning,
        },
    )
    live.call_changed(call.pk)
    return call


def _refuse(call: ToolCall, kind: str, output: str) -> ToolCall:
    call.output = output
    call.save()
    audit.record(
        kind,
        tool_call=call,
        payload={"tool": call.tool_name, "raw_arguments": call.raw_arguments, "output": output},
    )
    _record_output(call, output)
    return call


def _record_output(call: ToolCall, output: str) -> None:
    """Give the model this call's output, once."""
    if ToolCall.objects.filter(pk=call.pk, output_recorded=False).update(output=output, output_recorded=True):
        call.output, call.output_recorded = output, True
        message_append(call.run, role=Message.Role.TOOL, content=output, tool_call_id=call.call_id)


def step_is_answered(message: Message) -> bool:
    return not message.calls.filter(output_recorded=False).exists()


# --- decisions -----------------------------------------------------------------------


def toolcall_decide(
    *, call_id: int, reviewer, verdict: str, shown_hash: str, arguments=None, reason: str = ""
) -> Decision:
    """Approve, edit or reject a pending call: lock, check, store, resume on commit."""
    with transaction.atomic():
        call = ToolCall.objects.select_for_update().select_related("run").get(pk=call_id)
        if call.status != ToolCall.Status.PENDING:
            raise AlreadyDecided(call, call.final_decision())
        allowed, why = can_decide(reviewer, call)
        if not allowed:
            raise NotAllowed(why)
        if shown_hash != call.arguments_hash:
            raise StaleView("This call changed since you opened it; reload to see the current version.")
        reason = (reason or "").strip()
        tool = registry.get(call.tool_name)
        if verdict == Decision.Verdict.REJECT:
            if not reason:
                raise EditInvalid({"reason": ["A reason is required to reject; the agent will read it."]})
            decided_args = None
        elif verdict == Decision.Verdict.EDIT:
            if tool is None:
                raise NotAllowed("This tool is no longer registered; it can only be rejected.")
            try:
                decided_args = tool.normalize(arguments)
            except ArgumentsInvalid as exc:
                raise EditInvalid(exc.errors)
            if decided_args == call.arguments:
                verdict = Decision.Verdict.APPROVE
        elif verdict == Decision.Verdict.APPROVE:
            decided_args = call.arguments
        else:
            raise DecisionError(f"Unknown decision {verdict!r}.")
        try:
            with transaction.atomic():
                decision = Decision.objects.create(
                    tool_call=call,
                    reviewer=reviewer,
                    verdict=verdict,
                    arguments=decided_args,
                    arguments_hash=args_hash(decided_args) if decided_args is not None else "",
                    reason=reason,
                )
        except IntegrityError:
            call.refresh_from_db()
            raise AlreadyDecided(call, call.final_decision())
        audit.record(
            audit.AuditEvent.Kind.DECIDED,
            tool_call=call,
            actor=reviewer,
            payload={
                "verdict": verdict,
                "arguments_shown_hash": shown_hash,
                "arguments": decided_args,
                "arguments_hash": decision.arguments_hash,
                "reason": reason,
            },
        )
        if verdict == Decision.Verdict.REJECT:
            ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.REJECTED)
            _record_output(call, f"Rejected by reviewer: {reason}")
        else:
            ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED, approved_arguments=decided_args)
        live.call_changed(call.pk)
        request_resume(call.run_id)
    return decision


def toolcall_expire(*, call_id: int, reason: str = "") -> Decision | None:
    """Decide an overdue call as the system: rejected, with the reason given to the model."""
    with transaction.atomic():
        call = ToolCall.objects.select_for_update().get(pk=call_id)
        if call.status != ToolCall.Status.PENDING:
            return None
        minutes = max(1, round(settings.REVIEW_EXPIRY_SECONDS / 60))
        reason = reason or (f"no decision within {minutes // 60} h" if minutes % 60 == 0 else f"no decision within {minutes} min")
        decision = Decision.objects.create(tool_call=call, reviewer=None, verdict=Decision.Verdict.EXPIRE, reason=reason)
        ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXPIRED)
        audit.record(audit.AuditEvent.Kind.EXPIRED, tool_call=call, payload={"reason": reason})
        _record_output(call, f"Rejected by the system: {reason}. Nothing was done.")
        live.call_changed(call.pk)
        request_resume(call.run_id)
    return decision


def expire_overdue(now=None) -> int:
    now = now or timezone.now()
    count = 0
    for call_id in ToolCall.objects.filter(status=ToolCall.Status.PENDING, expires_at__lte=now).values_list("pk", flat=True):
        if toolcall_expire(call_id=call_id):
            count += 1
    return count


# --- execution -----------------------------------------------------------------------

CLAIM_LEASE = timedelta(minutes=10)


def toolcall_claim(call: ToolCall) -> bool:
    """Take an approved call for execution. Exactly one worker wins.

    A call left executing by a worker that died is taken again after the lease;
    the tool's idempotency key makes that second attempt harmless.
    """
    now = timezone.now()
    fresh = ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED)
    abandoned = ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.EXECUTING, claimed_at__lt=now - CLAIM_LEASE)
    won = fresh.update(status=ToolCall.Status.EXECUTING, claimed_at=now) or abandoned.update(claimed_at=now)
    return bool(won)


def toolcall_execute(call: ToolCall) -> bool:
    """Run an approved call exactly as approved, and record what happened."""
    if not toolcall_claim(call):
        return False
    call.refresh_from_db()
    run = call.run
    tool = registry.get(call.tool_name)
    decision = call.final_decision()
    arguments = call.approved_arguments
    # What runs must be what was approved: same tool, same argument hash.
    expected_hash = decision.arguments_hash if decision else call.arguments_hash
    if tool is None or arguments is None or args_hash(arguments) != expected_hash:
        return _finish(call, ToolCall.Status.FAILED, "Error: the approved call could not be matched; nothing was run.", arguments)
    audit.record(
        audit.AuditEvent.Kind.EXECUTING,
        tool_call=call,
        payload={
            "arguments": arguments,
            "arguments_hash": args_hash(arguments),
            "idempotency_key": call.idempotency_key,
            "dry_run": run.dry_run,
        },
    )
    try:
        output = tool.run(tool.parse(arguments), ToolContext(call.idempotency_key, run.pk, run.dry_run))
        status = ToolCall.Status.EXECUTED
    except ToolError as exc:
        output, status = f"Error: {exc}", ToolCall.Status.FAILED
    except Exception as exc:
        log.exception("tool %s failed", call.tool_name)
        output, status = f"Error: {call.tool_name} failed: {exc}", ToolCall.Status.FAILED
    if decision is not None and decision.verdict == Decision.Verdict.EDIT:
        output = f"{edit_summary(call.arguments, arguments)}\nResult: {output}"
    return _finish(call, status, output, arguments)


@transaction.atomic
def _finish(call: ToolCall, status: str, output: str, arguments) -> bool:
    ToolCall.objects.filter(pk=call.pk).update(status=status, executed_at=timezone.now())
    kind = audit.AuditEvent.Kind.EXECUTED if status == ToolCall.Status.EXECUTED else audit.AuditEvent.Kind.FAILED
    audit.record(
        kind,
        tool_call=call,
        payload={"arguments": arguments, "idempotency_key": call.idempotency_key, "output": output, "dry_run": call.run.dry_run},
    )
    _record_output(call, output)
    live.call_changed(call.pk)
    return True


class UndoError(Exception):
    pass


@transaction.atomic
def toolcall_undo(*, call: ToolCall, user) -> str:
    """Undo an executed reversible call, once, and record who did it."""
    call = ToolCall.objects.select_for_update().get(pk=call.pk)
    tool = registry.get(call.tool_name)
    if call.tier != Tier.REVERSIBLE or tool is None or tool.undo is None:
        raise UndoError("Only reversible tools can be undone.")
    if call.status != ToolCall.Status.EXECUTED:
        raise UndoError(f"Only executed calls can be undone; this one is {call.get_status_display().lower()}.")
    if call.run.dry_run:
        raise UndoError("A dry run wrote nothing to undo.")
    if not is_reviewer(user):
        raise UndoError("Only reviewers can undo calls.")
    result = str(tool.undo(call.idempotency_key))
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.UNDONE)
    audit.record(audit.AuditEvent.Kind.UNDONE, tool_call=call, actor=user, payload={"result": result})
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    return result


def edit_summary(original: dict, edited: dict) -> str:
    """A plain statement of what the reviewer changed, for the model."""
    changes = []
    for key in sorted(set(original) | set(edited)):
        before, after = original.get(key), edited.get(key)
        if before != after:
            changes.append(f"{key} from {before!r} to {after!r}")
    return (
        "A human reviewer edited this call before it ran: changed "
        + "; ".join(changes)
        + ". The call ran with the reviewer's arguments; do not retry the original."
    )
