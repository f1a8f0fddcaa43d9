"""Turn review, the loop's side: before the model answers a turn, hold it for a person when a turn rule
says so, and once a person decided, apply the decision exactly once.

A held turn is a ToolCall of kind "turn" (call id "turn-<n>"), bound to what the reviewer is shown: its
arguments are {"step": n, "transcript_sha256": the hash of the transcript the model would see}. Holding it
gives the turn back (the run waits at step n - 1, holding no process), so the turn is claimed again on
resumption, and the decision is applied then: Continue calls the model on the transcript reviewed; a note
is appended (a system row the reviewer wrote) and the model answers after it; a reply written by the
reviewer is the assistant's reply and the run completes. A turn call is never executed as a tool and never
gets a tool output row. What happens when nobody decides in time: turn_decisions.turn_expire.
"""

from django.db import transaction
from django.utils import timezone

from approvals import audit, live
from approvals.lib.hashing import args_hash, canonical_json
from approvals.policy import snapshot as policy_snapshot
from approvals.policy import turn_rules as turns

from ..models import AuditEvent, Decision, Message, Run, ToolCall, TurnRule, TurnShadow
from .deadlines import set_deadline
from .runs import opened, run_fail
from .transcript import messages_insert, run_lock, seq_after_last

TURN_TOOL = turns.TURN_TOOL
# A held turn that ended without being applied: the turn is held again if a rule still says so.
CLOSED = (ToolCall.Status.EXPIRED, ToolCall.Status.CANCELLED, ToolCall.Status.REJECTED, ToolCall.Status.FAILED)


def transcript_hash(transcript: list[Message]) -> str:
    """The hash of the transcript exactly as the model would receive it."""
    return args_hash([m.as_openai() for m in transcript])


def turn_review(*, run: Run, transcript: list[Message], claimed_by_step: bool = False) -> list[Message] | None:
    """Called by the loop holding turn n (run.step_count), before it calls the model.

    Returns the transcript the model should answer (with a reviewer's note, if one was added), or None
    when the run does not go on here: the turn is held for a person, or a reviewer wrote the reply.
    `claimed_by_step`: the turn was claimed in the commit of the step before it, so it was never held
    (holding gives a turn back; it is claimed again on its own), and it is reviewed under the policy that
    step's gate read a moment before: two queries less per step."""
    if not run.advancer.calls_model or not transcript:
        return transcript
    step = run.step_count
    held = None if claimed_by_step else run.tool_calls.filter(kind=ToolCall.Kind.TURN).order_by("-pk").first()
    if held is not None and (held.arguments or {}).get("step") != step:
        held = None  # the last turn held was an earlier one
    if held is not None and held.status not in CLOSED:
        return _settled(run, held, transcript)
    rules = turns.enabled_rules(fresh=not claimed_by_step)
    if not rules:
        return transcript
    rule, shadows = turns.match(rules, turns.Turn(run.agent, step, transcript))
    if shadows:
        TurnShadow.objects.bulk_create([TurnShadow(rule=r, run=run, step=step) for r in shadows], ignore_conflicts=True)
    if rule is None:
        return transcript
    _hold(run, rule, transcript)
    return None


def _call_id(run: Run, step: int, again: bool) -> str:
    """turn-<n>; a turn held again (its review expired and the run was retried) gets turn-<n>-<k>."""
    if not again:
        return f"turn-{step}"
    return f"turn-{step}-{run.tool_calls.filter(kind=ToolCall.Kind.TURN, arguments__step=step).count() + 1}"


def _description(run: Run, step: int, rule: TurnRule | None) -> str:
    why = f"turn rule “{rule.name}”" if rule else "the agent asked for it"
    return (
        f"Model turn {step} of the {run.agent} agent, held before the model answers ({why}). "
        "Let it continue, add a note it must read first, or write the reply yourself."
    )


def _store_pending(
    run: Run, step: int, sha256: str, message: Message, rule: TurnRule | None, *, opening=(), **fields
) -> ToolCall:
    """The pending turn, bound to {"step", "transcript_sha256"}, in the trail and pushed to the queue.
    `opening`: the run_started entry of a run inserted in this transaction (its chain starts here)."""
    now = timezone.now()
    arguments = {"step": step, "transcript_sha256": sha256}
    again = not opening and run.tool_calls.filter(kind=ToolCall.Kind.TURN, arguments__step=step).exists()
    reason = f"turn rule “{rule.name}”" if rule else "the agent asked for a review of this turn"
    call = ToolCall(
        run=run,
        message=message,
        call_id=_call_id(run, step, again),
        kind=ToolCall.Kind.TURN,
        tool_name=TURN_TOOL,
        arguments=arguments,
        raw_arguments=canonical_json(arguments),
        arguments_hash=args_hash(arguments),
        status=ToolCall.Status.PENDING,
        policy={"action": "review", "reason": reason, "turn_rule": rule.pk if rule else None},
        description=_description(run, step, rule),
        user_request=run.request,
        review_group=rule.group if rule else None,
    )
    for key, value in fields.items():
        setattr(call, key, value)
    # The turn tool's setting from the snapshot the turn rules were read from a moment ago, by this thread.
    set_deadline(call=call, setting=policy_snapshot.tool_setting(TURN_TOOL, fresh=False), now=now)
    call.save(force_insert=True)
    payload: dict[str, object] = {"tool": TURN_TOOL, "arguments": arguments, "arguments_hash": call.arguments_hash}
    payload |= {"description": call.description, "rule": rule.name if rule else "", "expires_at": call.expires_at}
    entries = [*opening, audit.Entry(AuditEvent.Kind.PROPOSED, call, payload=payload)]
    audit.record_many(run, entries, new_chain=bool(opening))
    live.call_changed(call.pk)
    live.run_changed(run.pk)
    return call


@transaction.atomic
def _hold(run: Run, rule: TurnRule, transcript: list[Message]) -> ToolCall | None:
    """Store the pending turn and give the turn back: the run waits, at the step before, holding no process."""
    step = run.step_count
    given_back = Run.objects.filter(pk=run.pk, step_count=step, thinking=True, status__in=Run.ACTIVE).update(
        step_count=step - 1, thinking=False, status=Run.Status.WAITING, updated_at=timezone.now()
    )
    if not given_back:
        return None  # the turn outlived its lease, or the run was cancelled meanwhile
    run.step_count, run.thinking, run.status = step - 1, False, Run.Status.WAITING
    return _store_pending(run, step, transcript_hash(transcript), transcript[-1], rule)


@transaction.atomic
def turn_request(
    *, run: Run, step: int, transcript: list[dict], request: str = "", fields: dict | None = None
) -> ToolCall:
    """A remote agent asks for its model's turn `step` to be reviewed before its model answers, sending the
    transcript its model would see (kept on the call as the agent's, shown on the card). The turn rules still
    say which group decides; with none matching, any reviewer. The agent applies the decision itself; the run
    waits for it. An unsaved run (services.run_open) is stored with the turn; `request`: the user's new request,
    appended first; `fields`: more of the call's columns the agent knows (its user's request)."""
    rule, _ = turns.match(turns.enabled_rules(), turns.Turn(run.agent, step, turns.rows_of(transcript)))
    message, opening = _waiting_run_message(run, request)
    fields = {"agent_facts": {"transcript": transcript}, **(fields or {})}
    return _store_pending(run, step, args_hash(transcript), message, rule, opening=opening, **fields)


def _waiting_run_message(run: Run, request: str) -> tuple[Message, list[audit.Entry]]:
    """Set the run waiting (inserting a run from run_open(), with its request as message 0 and its run_started
    entry returned) and return the message a turn follows: the last, or the user's new `request` appended."""
    waiting = {"status": Run.Status.WAITING, "thinking": False, "last_error": "", "updated_at": timezone.now()}
    for key, value in waiting.items():
        setattr(run, key, value)
    if run.pk is None:
        run.save(force_insert=True)
        rows, entries = opened(run)
        rows[0].seq = 0
        messages_insert(rows)
        return rows[0], entries
    Run.objects.filter(pk=run.pk).update(**waiting)  # locks the run's row: messages are appended under it
    if not request:
        last = run.messages.order_by("-seq").first()
        assert last is not None  # a run starts with its request
        return last, []
    message = Message(run=run, role=Message.Role.USER, content=request, seq=seq_after_last(run))
    messages_insert([message])
    return message, []


def _give_back(run: Run) -> None:
    """A resumption that found the turn still waiting for a person (a task delivered twice): wait again."""
    step = run.step_count
    if Run.objects.filter(pk=run.pk, step_count=step, thinking=True).update(
        step_count=step - 1, thinking=False, status=Run.Status.WAITING, updated_at=timezone.now()
    ):
        live.run_changed(run.pk)


def _settled(run: Run, call: ToolCall, transcript: list[Message]) -> list[Message] | None:
    if call.status == ToolCall.Status.PENDING:
        _give_back(run)
        return None
    if call.status != ToolCall.Status.APPROVED:
        return transcript  # applied already (a worker died after applying it): the model answers
    bound = call.arguments
    assert bound is not None  # {"step", "transcript_sha256"}, stored with the turn (_store_pending)
    with transaction.atomic():
        if bound.get("transcript_sha256") != transcript_hash(transcript):
            _refuse(run, call, bound["step"])
            return None
        if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED).update(
            status=ToolCall.Status.EXECUTED, executed_at=timezone.now()
        ):
            return transcript  # another worker applied it
        run_lock(run_id=run.pk)  # rows are appended under the run's lock
        return _apply(run, call, transcript)


def _refuse(run: Run, call: ToolCall, step: int) -> None:
    """Fail closed: what the reviewer saw is not what the model would read now."""
    error = f"The transcript changed after model turn {step} was reviewed; the decision was not applied."
    if ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED).update(status=ToolCall.Status.FAILED):
        audit.record(AuditEvent.Kind.FAILED, tool_call=call, payload={"error": error})
        live.call_changed(call.pk)
    run_fail(run=run, error=error + " Retry to have the turn reviewed again.")
    return None


def _apply(run: Run, call: ToolCall, transcript: list[Message]) -> list[Message] | None:
    """The decision, in the transaction that marks the turn applied: what the model reads next, or the reply."""
    decision = call.final_decision()
    payload = {"applied": decision.verdict, "arguments": call.arguments, "written_by": ""}
    rows = transcript
    if decision.verdict in (Decision.Verdict.NOTE, Decision.Verdict.REPLY):
        payload["written_by"] = decision.reviewer_label
        row = _reviewer_row(run, decision, transcript[-1].seq + 1)
        rows = transcript + [row]
    audit.record(AuditEvent.Kind.EXECUTED, tool_call=call, payload=payload)
    live.call_changed(call.pk)
    live.run_changed(run.pk)
    if decision.verdict == Decision.Verdict.REPLY:
        _complete(run)
        return None
    return rows


def _reviewer_row(run: Run, decision: Decision, seq: int) -> Message:
    if decision.verdict == Decision.Verdict.NOTE:
        content = f"Note from reviewer {decision.reviewer_label}: {decision.guidance}"
        role = Message.Role.SYSTEM
    else:
        content, role = decision.guidance, Message.Role.ASSISTANT
    return Message.objects.create(run=run, seq=seq, role=role, content=content, written_by=decision.reviewer)


def _complete(run: Run) -> None:
    """The reviewer's reply is the run's final answer, as a model's reply without tool calls would be."""
    now = timezone.now()
    fields = {"status": Run.Status.COMPLETED, "thinking": False, "finished_at": now, "updated_at": now}
    if not Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(last_error="", **fields):
        return  # cancelled meanwhile
    for key, value in fields.items():
        setattr(run, key, value)
    audit.record(AuditEvent.Kind.COMPLETED, run=run, payload={"steps": run.step_count, "reply_by": "reviewer"})
