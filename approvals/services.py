"""Everything that writes the record: one function per action, each atomic."""

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mass_mail
from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.module_loading import import_string

from . import audit, live, policy
from .access import can_decide, in_group, is_reviewer, reviewers_for
from .models import (
    Decision,
    Message,
    Run,
    ShadowResult,
    Tier,
    ToolCall,
    ToolSetting,
    args_hash,
    duration_text,
)
from .tools import ArgumentsInvalid, Tool, ToolContext, ToolError, registry

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
            super().__init__(
                f"Already {decision.get_verdict_display().lower()} by {decision.reviewer_label} at {when}."
            )
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
    # Calls first, then the run: the order a decision locks them in, so the two cannot deadlock.
    pending = list(
        ToolCall.objects.select_for_update()
        .filter(run=run, status=ToolCall.Status.PENDING)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    updated = Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(
        status=Run.Status.CANCELLED, thinking=False, finished_at=timezone.now()
    )
    if updated:
        ToolCall.objects.filter(pk__in=pending).update(status=ToolCall.Status.CANCELLED)
        for call_id in pending:
            live.call_changed(call_id)
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
        return _refuse(
            call, "forbidden", f"Error: {tool.name} is not allowed here ({outcome.reason}). Nothing was done."
        )
    try:
        call.description = tool.render_description(args)
        call.facts = tool.fetch_facts(args)
    except Exception as exc:
        # Without trustworthy facts nobody may skip review.
        call.description = call.description or f"{tool.name} (description unavailable: {exc})"
        call.facts = {"error": f"facts could not be fetched: {exc}"}
        outcome = replace(outcome, action=policy.REVIEW, reason=f"facts could not be fetched ({exc}); held for review")
        call.policy = outcome.as_dict()
    if outcome.action == policy.RUN:
        call.status = ToolCall.Status.APPROVED
        call.approved_arguments = call.arguments
        call.save()
        shadow = _shadow_record(call, tool)
        audit.record(
            audit.AuditEvent.Kind.AUTO_RUN,
            tool_call=call,
            payload={
                "tool": tool.name,
                "arguments": call.arguments,
                "description": call.description,
                "policy": call.policy,
                "facts": call.facts,
                "shadow": shadow,
            },
        )
        return call
    call.status = ToolCall.Status.PENDING
    call.required_approvals = outcome.required_approvals
    call.review_group_id = outcome.group_id
    _set_deadline(call, ToolSetting.for_tool(tool.name), timezone.now())
    call.save()
    shadow = _shadow_record(call, tool)
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
            "expires_at": call.expires_at,
            "shadow": shadow,
        },
    )
    live.call_changed(call.pk)
    return call


def _set_deadline(call: ToolCall, setting: ToolSetting, now: datetime) -> None:
    call.expires_at = now + setting.timeout()
    call.warn_at = call.expires_at - setting.warn_before()
    call.warned_at = None


def _shadow_record(call: ToolCall, tool: Tool) -> list[dict]:
    """Store what each matching shadow rule would have decided; it changes nothing about the call."""
    recorded = []
    for rule, outcome in policy.shadow_outcomes(tool, call.arguments):
        ShadowResult.objects.create(rule=rule, tool_call=call, outcome=outcome)
        recorded.append({"rule": rule.pk, "name": rule.name, "outcome": outcome})
    return recorded


def _shadow_settle(call: ToolCall, verdict: str) -> None:
    """Put the people's final verdict next to what the shadow rules would have done."""
    for result in ShadowResult.objects.filter(tool_call=call, verdict=""):
        result.verdict = verdict
        result.agreed = ShadowResult.agreement(result.outcome, verdict)
        result.save(update_fields=["verdict", "agreed"])


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
    """Give the model this call's output, once; after the step's last output, the reviewers' guidance.

    The run row is locked first, so of several outputs recorded at once exactly
    one sees the step answered, and the guidance follows every tool output of
    the step (valid OpenAI message order).
    """
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=call.run_id).first()
        if not ToolCall.objects.filter(pk=call.pk, output_recorded=False).update(output=output, output_recorded=True):
            return
        call.output, call.output_recorded = output, True
        message_append(call.run, role=Message.Role.TOOL, content=output, tool_call_id=call.call_id)
        step = Message.objects.get(pk=call.message_id)
        if step_is_answered(step):
            _deliver_guidance(call.run, step)


def _deliver_guidance(run: Run, step: Message) -> None:
    decisions = Decision.objects.filter(tool_call__message=step).exclude(guidance="").select_related("reviewer")
    lines = [f"Guidance from reviewer {d.reviewer_label}: {d.guidance}" for d in decisions.order_by("id")]
    if lines:
        message_append(run, role=Message.Role.USER, content="\n".join(lines))


def step_is_answered(message: Message) -> bool:
    return not message.calls.filter(output_recorded=False).exists()


# --- decisions -----------------------------------------------------------------------

APPROVING = (Decision.Verdict.APPROVE, Decision.Verdict.EDIT)


def _effective_group(call: ToolCall, outcome: policy.PolicyOutcome) -> int | None:
    """The group that must decide: a group that policy names since the call was proposed wins;
    otherwise the call's own (which an escalation may have changed)."""
    if outcome.group_id and outcome.group_id != (call.policy or {}).get("group_id"):
        return outcome.group_id
    return call.review_group_id


def _counted_approvals(call: ToolCall, arguments_hash: str, group_id: int | None) -> list[Decision]:
    """Approvals in this review round of exactly these arguments, by reviewers of the deciding group."""
    approvals = call.decisions.filter(round=call.review_round, verdict__in=APPROVING, arguments_hash=arguments_hash)
    return [d for d in approvals.select_related("reviewer") if d.reviewer and in_group(d.reviewer, group_id)]


@dataclass
class _Approval:
    """What an approval or edit amounts to: the arguments, whether it settles the call, what it changes."""

    verdict: str
    arguments: dict
    count: int
    required: int
    changes: dict

    @property
    def final(self) -> bool:
        return self.count >= self.required


def _approval(call: ToolCall, reviewer, verdict: str, arguments) -> _Approval:
    """Check an approval (or edit) against the tool's schema and today's policy; count it."""
    tool = registry.get(call.tool_name)
    if tool is None:
        raise NotAllowed("This tool is no longer registered; it can only be rejected.")
    decided = call.review_arguments
    if verdict == Decision.Verdict.EDIT:
        try:
            decided = tool.normalize(arguments)
        except ArgumentsInvalid as exc:
            raise EditInvalid(exc.errors)
        if decided == call.review_arguments:
            verdict = Decision.Verdict.APPROVE
    outcome = policy.evaluate(tool, decided)
    if outcome.action == policy.FORBID:
        raise NotAllowed(f"Policy forbids this call ({outcome.reason}); it can only be rejected.")
    group_id = _effective_group(call, outcome)
    if not in_group(reviewer, group_id):
        raise NotAllowed(f"Only members of the group “{outcome.group_name}” may approve this ({outcome.reason}).")
    required = max(call.required_approvals, outcome.required_approvals if outcome.action == policy.REVIEW else 1)
    changes = {"approved_arguments": decided, "required_approvals": required, "review_group_id": group_id}
    if outcome.action == policy.REVIEW:
        changes["policy"] = outcome.as_dict()
    if decided != call.review_arguments:
        # The facts and description now describe the edited call; execution checks against these.
        changes.update(_describe(tool, decided))
    count = len(_counted_approvals(call, args_hash(decided), group_id)) + 1
    return _Approval(verdict, decided, count, required, changes)


def toolcall_decide(
    *, call_id: int, reviewer, verdict: str, shown_hash: str, arguments=None, reason: str = "", guidance: str = ""
) -> Decision:
    """Approve, edit or reject a pending call: lock, check, store, resume on commit.

    A call that needs N approvals stays pending until N different reviewers of
    its group approve the same arguments; the Nth approval is the final decision.
    A reject always ends it. Guidance is shown to the model after the step's outputs.
    """
    with transaction.atomic():
        call = ToolCall.objects.select_for_update(of=("self",)).select_related("run", "review_group").get(pk=call_id)
        if call.status != ToolCall.Status.PENDING:
            raise AlreadyDecided(call, call.final_decision())
        allowed, why = can_decide(reviewer, call)
        if not allowed:
            raise NotAllowed(why)
        if shown_hash != call.review_hash:
            raise StaleView("This call changed since you opened it; reload to see the current version.")
        reason, guidance = (reason or "").strip(), (guidance or "").strip()
        if verdict == Decision.Verdict.REJECT:
            if not reason:
                raise EditInvalid({"reason": ["A reason is required to reject; the agent will read it."]})
            approval = None
        elif verdict in APPROVING:
            approval = _approval(call, reviewer, verdict, arguments)
            verdict = approval.verdict
        else:
            raise DecisionError(f"Unknown decision {verdict!r}.")
        decided_args = approval.arguments if approval else None
        final = approval.final if approval else True
        try:
            with transaction.atomic():
                decision = Decision.objects.create(
                    tool_call=call,
                    reviewer=reviewer,
                    verdict=verdict,
                    arguments=decided_args,
                    arguments_hash=args_hash(decided_args) if decided_args is not None else "",
                    reason=reason,
                    guidance=guidance,
                    round=call.review_round,
                    final=final,
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
                "guidance": guidance,
                "round": call.review_round,
                "final": final,
                "approvals": f"{approval.count} of {approval.required}" if approval else "",
                "facts": approval.changes.get("facts") if approval else None,
            },
        )
        unclaim = {"reviewing_by": None, "reviewing_until": None}
        if approval is None:
            ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.REJECTED, **unclaim)
            note = " The reviewer's guidance follows." if guidance else ""
            _record_output(call, f"Rejected by reviewer: {reason}{note}")
        elif final:
            ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED, **approval.changes, **unclaim)
        else:
            ToolCall.objects.filter(pk=call.pk).update(**approval.changes, **unclaim)
        if final:
            _shadow_settle(call, verdict)
            request_resume(call.run_id)
        live.call_changed(call.pk)
    return decision


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


def toolcall_approve_many(*, reviewer, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Approve several calls, each in its own decision bound to its own id and shown hash.

    Returns, per call, "" when it was approved (or counted towards its approvals), else why not.
    """
    results = []
    for call_id, shown_hash in items:
        try:
            toolcall_decide(call_id=call_id, reviewer=reviewer, verdict=Decision.Verdict.APPROVE, shown_hash=shown_hash)
            results.append((call_id, ""))
        except ToolCall.DoesNotExist:
            results.append((call_id, "There is no such call."))
        except DecisionError as exc:
            results.append((call_id, str(exc)))
    return results


# --- claims: "being reviewed by X" ---------------------------------------------------

REVIEW_CLAIM = timedelta(minutes=5)


def toolcall_review_start(*, call_id: int, reviewer) -> bool:
    """Mark a pending call as being reviewed by this reviewer for a few minutes.

    A hint for others, never a lock: anyone allowed may still decide. Someone
    else's live claim is left alone. Returns whether the reviewer holds the claim.
    """
    call = ToolCall.objects.select_related("run").get(pk=call_id)
    allowed, why = can_decide(reviewer, call)
    if not allowed or not call.is_pending:
        raise NotAllowed(why or "This call is no longer waiting for review.")
    now = timezone.now()
    until = now + REVIEW_CLAIM
    pending = ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.PENDING)
    if pending.filter(reviewing_by=reviewer, reviewing_until__gt=now).update(reviewing_until=until):
        return True
    with transaction.atomic():
        free = Q(reviewing_by__isnull=True) | Q(reviewing_until__isnull=True) | Q(reviewing_until__lte=now)
        if not pending.filter(free).update(reviewing_by=reviewer, reviewing_until=until):
            return False
        audit.record(audit.AuditEvent.Kind.REVIEW_CLAIMED, tool_call=call, actor=reviewer, payload={"until": until})
        live.call_changed(call.pk)
    return True


def toolcall_review_release(*, call_id: int, reviewer) -> bool:
    with transaction.atomic():
        if not ToolCall.objects.filter(pk=call_id, reviewing_by=reviewer).update(
            reviewing_by=None, reviewing_until=None
        ):
            return False
        call = ToolCall.objects.select_related("run").get(pk=call_id)
        audit.record(audit.AuditEvent.Kind.REVIEW_RELEASED, tool_call=call, actor=reviewer)
        live.call_changed(call_id)
    return True


# --- deadlines -----------------------------------------------------------------------


def _notify_reviewers(call: ToolCall, subject: str, text: str) -> None:
    """Email the reviewers who may decide this call, once the transaction commits."""
    link = reverse("approvals:call", args=[call.pk])
    recipients = [u.email for u in reviewers_for(call) if u.email]
    body = f"{text}\n\n{call.current_description}\n\nOpen it in ReviewHub: {link}\n"
    messages = [(subject, body, None, [address]) for address in recipients]

    def send():
        try:
            send_mass_mail(messages, fail_silently=False)
        except Exception as exc:  # a notification is a courtesy; the queue shows the flag anyway
            log.warning("could not notify reviewers of call %s: %s", call.pk, exc)

    if messages:
        transaction.on_commit(send)


def toolcall_warn(*, call_id: int, now: datetime) -> bool:
    """Flag a call near its deadline and notify its reviewers, once."""
    with transaction.atomic():
        won = ToolCall.objects.filter(
            pk=call_id, status=ToolCall.Status.PENDING, warned_at__isnull=True, warn_at__lte=now
        ).update(warned_at=now)
        if not won:
            return False
        call = ToolCall.objects.select_related("run", "review_group").get(pk=call_id)
        left = duration_text(max(call.expires_at - now, timedelta(0)))
        audit.record(audit.AuditEvent.Kind.DEADLINE_NEAR, tool_call=call, payload={"expires_at": call.expires_at})
        _notify_reviewers(call, f"Decide soon: {call.tool_name} #{call.pk}", f"This call expires in {left}.")
        live.call_changed(call.pk)
    return True


def _escalate(call: ToolCall, setting: ToolSetting, now: datetime) -> None:
    _set_deadline(call, setting, now)
    ToolCall.objects.filter(pk=call.pk).update(
        review_group=setting.escalate_to,
        escalated_at=now,
        expires_at=call.expires_at,
        warn_at=call.warn_at,
        warned_at=None,
        reviewing_by=None,
        reviewing_until=None,
    )
    call.review_group = setting.escalate_to
    audit.record(
        audit.AuditEvent.Kind.ESCALATED,
        tool_call=call,
        payload={"to_group": setting.escalate_to.name, "expires_at": call.expires_at},
    )
    _notify_reviewers(
        call,
        f"Escalated to you: {call.tool_name} #{call.pk}",
        f"Nobody decided this call in time; it was escalated to the group “{setting.escalate_to.name}”.",
    )
    live.call_changed(call.pk)


def toolcall_expire(*, call_id: int, reason: str = "", now: datetime | None = None) -> Decision | None:
    """Decide an overdue call as the system: escalate it once where its tool says so, else reject it.

    With `now`, only a call whose deadline has passed by then is touched (the
    periodic pass); without it, the caller says the call is overdue.
    """
    with transaction.atomic():
        call = ToolCall.objects.select_for_update(of=("self",)).select_related("run").get(pk=call_id)
        if call.status != ToolCall.Status.PENDING:
            return None
        if now is not None and (call.expires_at is None or call.expires_at > now):
            return None
        now = now or timezone.now()
        setting = ToolSetting.for_tool(call.tool_name)
        if setting.escalates and call.escalated_at is None:
            _escalate(call, setting, now)
            return None
        reason = reason or f"no decision within {duration_text(setting.timeout())}"
        decision = Decision.objects.create(
            tool_call=call, reviewer=None, verdict=Decision.Verdict.EXPIRE, reason=reason, round=call.review_round
        )
        ToolCall.objects.filter(pk=call.pk).update(
            status=ToolCall.Status.EXPIRED, reviewing_by=None, reviewing_until=None
        )
        audit.record(audit.AuditEvent.Kind.EXPIRED, tool_call=call, payload={"reason": reason})
        _record_output(call, f"Rejected by the system: {reason}. Nothing was done.")
        _shadow_settle(call, Decision.Verdict.EXPIRE)
        live.call_changed(call.pk)
        request_resume(call.run_id)
    return decision


def expire_overdue(now=None) -> int:
    """Escalate or reject every pending call past its deadline; returns how many were rejected."""
    now = now or timezone.now()
    count = 0
    for call_id in ToolCall.objects.filter(status=ToolCall.Status.PENDING, expires_at__lte=now).values_list(
        "pk", flat=True
    ):
        if toolcall_expire(call_id=call_id, now=now):
            count += 1
    return count


def deadlines_apply(now=None) -> dict:
    """The periodic pass: flag and notify calls near their deadline, then escalate or expire overdue ones."""
    now = now or timezone.now()
    near = ToolCall.objects.filter(status=ToolCall.Status.PENDING, warned_at__isnull=True, warn_at__lte=now)
    warned = sum(toolcall_warn(call_id=pk, now=now) for pk in near.values_list("pk", flat=True))
    return {"warned": warned, "expired": expire_overdue(now)}


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


@dataclass(frozen=True)
class Return:
    """Why an approved call goes back to the queue instead of running."""

    reason: str
    new_round: bool = True  # everyone reviews again; False keeps the approvals so far
    facts: dict | None = None
    changes: dict = field(default_factory=dict)
    outcome: policy.PolicyOutcome | None = None


def _recheck(call: ToolCall, tool: Tool, args, arguments: dict) -> Return | None:
    """Just before running: does policy still allow it, and are the facts the reviewers saw still true?"""
    outcome = policy.evaluate(tool, arguments)
    if outcome.action == policy.FORBID:
        return Return(f"Policy now forbids this call ({outcome.reason}); it can only be rejected.", outcome=outcome)
    if outcome.action == policy.REVIEW:
        group_id = _effective_group(call, outcome)
        have = len(_counted_approvals(call, args_hash(arguments), group_id))
        if have < outcome.required_approvals:
            who = f" from the group “{outcome.group_name}”" if outcome.group_id and group_id == outcome.group_id else ""
            return Return(
                f"Policy changed while the call waited ({outcome.reason}): it needs "
                f"{outcome.required_approvals} approval(s){who} and has {have}.",
                new_round=False,
                outcome=outcome,
            )
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
    if changes:
        listed = "; ".join(f"{name.replace('_', ' ')}: {c['before']} → {c['after']}" for name, c in changes.items())
        return Return(f"The facts changed since the call was reviewed ({listed}).", facts=fresh, changes=changes)
    return None


@transaction.atomic
def _return_to_queue(call: ToolCall, back: Return) -> None:
    now = timezone.now()
    _set_deadline(call, ToolSetting.for_tool(call.tool_name), now)
    fields = {
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
        fields["review_group_id"] = _effective_group(call, back.outcome)
        fields["policy"] = back.outcome.as_dict()
    if back.new_round:
        fields["review_round"] = call.review_round + 1
    if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.EXECUTING).update(**fields):
        return
    if not back.new_round:
        # The approvals stand, but the last one no longer settled the call.
        call.decisions.filter(round=call.review_round, final=True).update(final=False)
    audit.record(
        audit.AuditEvent.Kind.RETURNED,
        tool_call=call,
        payload={
            "reason": back.reason,
            "changes": back.changes,
            "round": fields.get("review_round", call.review_round),
        },
    )
    live.call_changed(call.pk)


def toolcall_execute(call: ToolCall) -> bool:
    """Run an approved call exactly as approved, and record what happened.

    Just before running, policy is evaluated again and the facts are fetched
    again: a call that policy now forbids or wants more approvals for, or whose
    material facts changed, does not run and goes back to the queue.
    """
    retake = call.status == ToolCall.Status.EXECUTING
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
        return _finish(
            call, ToolCall.Status.FAILED, "Error: the approved call could not be matched; nothing was run.", arguments
        )
    try:
        args = tool.parse(arguments)
    except ArgumentsInvalid as exc:
        return _finish(
            call,
            ToolCall.Status.FAILED,
            f"Error: the approved arguments are no longer valid: {exc.message()}",
            arguments,
        )
    if not retake:  # a retaken call passed these checks before its worker died
        back = _recheck(call, tool, args, arguments)
        if back is not None:
            _return_to_queue(call, back)
            return False
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
        output = tool.run(args, ToolContext(call.idempotency_key, run.pk, run.dry_run))
        status = ToolCall.Status.EXECUTED
    except ToolError as exc:
        output, status = f"Error: {exc}", ToolCall.Status.FAILED
    except Exception as exc:
        log.exception("tool %s failed", call.tool_name)
        output, status = f"Error: {call.tool_name} failed: {exc}", ToolCall.Status.FAILED
    if call.arguments is not None and arguments != call.arguments:
        output = f"{edit_summary(call.arguments, arguments)}\nResult: {output}"
    return _finish(call, status, output, arguments)


@transaction.atomic
def _finish(call: ToolCall, status: str, output: str, arguments) -> bool:
    ToolCall.objects.filter(pk=call.pk).update(status=status, executed_at=timezone.now())
    kind = audit.AuditEvent.Kind.EXECUTED if status == ToolCall.Status.EXECUTED else audit.AuditEvent.Kind.FAILED
    audit.record(
        kind,
        tool_call=call,
        payload={
            "arguments": arguments,
            "idempotency_key": call.idempotency_key,
            "output": output,
            "dry_run": call.run.dry_run,
        },
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
