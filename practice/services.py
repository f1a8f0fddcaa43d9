"""Planting practice calls, and scoring the decisions on them.

A practice call is made by code from a real recent call of its tool, with one mistake the tool declares. It goes
through the same gate as the model's calls (services.step_record): the same row, description, facts fetched for
real, deadline, group, trail, live push and notices. Its run, a copy of the real call's request, is never advanced.
"""

import json
import random
import secrets

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals import audit, live, policy, services
from approvals.models import AuditEvent, Decision, Message, Run, ToolCall
from approvals.services.shown import seconds_open
from approvals.tools import ArgumentsInvalid, Tool, registry

from .mistakes import Mistake
from .models import PracticeCall, PracticeSetting


class _NotPlanted(Exception):
    """The gate did not hold the copy for review (a rule changed meanwhile): nothing is kept."""


def _plantable(tool: Tool, mistake: Mistake, arguments: dict | None):
    """The planted arguments, if they are a call the gate would hold for a person; else None."""
    planted = mistake.plant(dict(arguments or {}))
    if planted is None:
        return None
    try:
        args = tool.parse(planted.arguments)
    except ArgumentsInvalid:
        return None
    if tool.draft_problem(args) or policy.evaluate(tool, args.model_dump(mode="json")).action != policy.REVIEW:
        return None
    return planted


def _practice_run(source: ToolCall) -> Run:
    """A run like the source's: same agent, request and requester, waiting for review; nothing ever advances it."""
    real = source.run
    run = Run.objects.create(
        agent=real.agent, request=real.request, requested_by=real.requested_by, status=Run.Status.WAITING
    )
    for message in real.messages.filter(role__in=(Message.Role.SYSTEM, Message.Role.USER)).order_by("seq")[:2]:
        services.message_append(run=run, role=message.role, content=message.content)
    payload = {"agent": run.agent, "request": run.request, "dry_run": False}
    audit.record(AuditEvent.Kind.RUN_STARTED, run=run, actor=real.requested_by, payload=payload)
    return run


def practice_plant(*, source: ToolCall, mistake: Mistake) -> PracticeCall | None:
    """Plant one practice call copied from `source` with `mistake`; None when that mistake does not fit it."""
    tool = registry.get(source.tool_name)
    planted = _plantable(tool, mistake, source.arguments) if tool is not None else None
    if planted is None:
        return None
    try:
        with transaction.atomic():
            return _plant(source, mistake, planted)
    except _NotPlanted:
        return None


def _plant(source: ToolCall, mistake: Mistake, planted) -> PracticeCall:
    run = _practice_run(source)
    practice = PracticeCall.objects.create(
        run=run, source=source, tool_name=source.tool_name, mistake=mistake.name, explanation=planted.explanation
    )
    call_id = f"call_{secrets.token_hex(12)}"
    raw = json.dumps(planted.arguments)
    services.step_record(
        run=run, content=source.reasoning, calls=[services.ProposedCall(call_id, source.tool_name, raw)]
    )
    call = run.tool_calls.get()
    if call.status != ToolCall.Status.PENDING:
        raise _NotPlanted()
    practice.tool_call, practice.group_id = call, call.review_group_id
    practice.save(update_fields=["tool_call", "group"])
    # In the global chain, not the run's: the call's own trail must not tell it apart before it is decided.
    payload = {"tool_call": call.pk, "source": source.pk, "mistake": mistake.name, "explanation": planted.explanation}
    audit.record(AuditEvent.Kind.PRACTICE_PLANTED, payload=payload)
    return practice


def _due_sources(setting: PracticeSetting):
    """Real calls of the setting's tool held for review since its last practice call, newest first."""
    last = PracticeCall.objects.filter(tool_name=setting.tool_name).order_by("-planted_at").first()
    calls = ToolCall.objects.filter(tool_name=setting.tool_name, kind=ToolCall.Kind.CALL, policy__action=policy.REVIEW)
    calls = calls.exclude(run__in=PracticeCall.objects.values("run_id")).filter(run__advanced_by=Run.AdvancedBy.LOCAL)
    if setting.group_id:
        calls = calls.filter(review_group_id=setting.group_id)
    if last is not None:
        calls = calls.filter(Q(created_at__gt=last.planted_at))
    return calls.order_by("-created_at", "-id")


def practice_plant_due(*, choose=random.shuffle) -> list[PracticeCall]:
    """For each enabled setting whose tool had `rate` real proposals since its last practice call: plant one,
    copied from the newest, with one of the setting's mistakes that fits it (tried in `choose`'s order)."""
    planted = []
    for setting in PracticeSetting.objects.filter(enabled=True):
        tool = registry.get(setting.tool_name)
        sources = _due_sources(setting)
        if tool is None or sources.count() < setting.rate:
            continue
        mistakes = [m for m in tool.mistakes if not setting.mistakes or m.name in setting.mistakes]
        choose(mistakes)
        source = sources.first()
        practice = next(filter(None, (practice_plant(source=source, mistake=m) for m in mistakes)), None)
        if practice is not None:
            planted.append(practice)
    return planted


def _outcome(call: ToolCall, practice: PracticeCall, decision: Decision) -> str:
    """Reject or Respond caught it; an Edit caught it if it changed what carries the mistake; Approve missed it."""
    if decision.verdict == Decision.Verdict.REJECT:
        return PracticeCall.Outcome.CAUGHT
    if decision.verdict == Decision.Verdict.EDIT:
        tool = registry.get(call.tool_name)
        mistake = next((m for m in tool.mistakes if m.name == practice.mistake), None) if tool else None
        if mistake is not None and mistake.removed_by(call.review_arguments or {}, decision.arguments):
            return PracticeCall.Outcome.CAUGHT
    return PracticeCall.Outcome.MISSED


def practice_settle(*, call: ToolCall, decision: Decision) -> bool:
    """Score a decision on a practice call and close it, never approving it to run; False for a real call.

    Called inside the decision's transaction (approvals/services/decisions.py, through approvals.planted)."""
    practice = PracticeCall.objects.select_for_update().filter(run_id=call.run_id).first()
    if practice is None:
        return False
    now = timezone.now()
    outcome = _outcome(call, practice, decision)
    practice.outcome, practice.reviewer, practice.decided_at = outcome, decision.reviewer, now
    practice.seconds_to_decide = seconds_open(call, decision.reviewer, now)
    practice.save(update_fields=["outcome", "reviewer", "decided_at", "seconds_to_decide"])
    rejected = decision.verdict == Decision.Verdict.REJECT
    status = ToolCall.Status.REJECTED if rejected else ToolCall.Status.CANCELLED
    output = "Practice call: it was never executed."
    ToolCall.objects.filter(pk=call.pk).update(
        status=status, output=output, reviewing_by=None, reviewing_until=None, executed_at=None
    )
    Run.objects.filter(pk=call.run_id).update(status=Run.Status.COMPLETED, finished_at=now, updated_at=now)
    payload = {"outcome": outcome, "mistake": practice.mistake, "explanation": practice.explanation}
    audit.record(AuditEvent.Kind.PRACTICE_SCORED, tool_call=call, actor=decision.reviewer, payload=payload)
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    return True


def practice_run_finish(run_id: int) -> None:
    """A practice run that nothing waits in any more (its call expired) is over: completed, never advanced."""
    now = timezone.now()
    runs = Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).exclude(tool_calls__status=ToolCall.Status.PENDING)
    if runs.update(status=Run.Status.COMPLETED, finished_at=now, updated_at=now):
        live.run_changed(run_id)


def feedback_for(call_id: int) -> str:
    """What the reviewer is told once a practice call is decided ("" for a real call or one still waiting)."""
    practice = PracticeCall.objects.select_related("tool_call").filter(tool_call_id=call_id).first()
    return practice.feedback() if practice is not None else ""
