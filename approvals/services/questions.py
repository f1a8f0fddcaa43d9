"""A tool that asks a person: the call waits as a question, and the answer becomes the tool's output, once.

Wherever a tool's body runs (a read-only call run at once by the gate, an approved call by execution), an
`Ask` turns the call into a pending question: kind question, the question stored, a deadline, a trail event,
a live push; the run waits holding no process. The answer is a decision like any other (toolcall_answer):
lock, pending, may this reviewer decide, bound to the hash of the question shown, one final decision, the
trail, the output recorded once and the run resumed on commit. Declining is a reject with a reason; expiry
works as for calls.
"""

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals import audit, live
from approvals.kinds import revision as revisions
from approvals.kinds.question import AnswerInvalid, question_problem, validated_answer
from approvals.lib.hashing import args_hash
from approvals.lib.text import edit_summary
from approvals.policy import snapshot as policy_snapshot

from ..models import AuditEvent, Decision, ToolCall
from ..tools import ArgumentsInvalid, Ask, answer_json, registry
from .deadlines import set_deadline
from .decisions import UNCLAIM, _locked_pending
from .errors import AlreadyDecided, EditInvalid, NotAllowed
from .runs import request_resume
from .shadow import shadow_settle
from .steps import Gated
from .transcript import record_output


class AnswerRefused(EditInvalid):
    """An answer the question's schema does not take: field by field, nothing changed."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(errors)
        self.args = ("The answer is not valid.",)


def _pend(call: ToolCall, ask: Ask, *, fresh: bool = True) -> str:
    """Make the call (stored or not) a pending question; "" when it waits, else the error the model reads.
    Not `fresh`: its tool's setting as this thread read it a moment ago (the gate, for the same call)."""
    question = ask.as_question()
    problem = question_problem(question)
    if problem:
        return f"Error: {call.tool_name} asked a question nobody can answer: {problem}."
    call.kind, call.question, call.status = ToolCall.Kind.QUESTION, question, ToolCall.Status.PENDING
    call.required_approvals = 1
    set_deadline(call=call, setting=policy_snapshot.tool_setting(call.tool_name, fresh=fresh), now=timezone.now())
    return ""


def _asked(call: ToolCall) -> dict:
    """The trail's record of a question asked."""
    return {"question": call.question, "question_hash": call.review_hash, "expires_at": call.expires_at}


def question_from_gate(item: Gated, ask: Ask) -> str:
    """A read-only call run at once by the gate asked: it is stored pending, as a question (the step's
    transaction stores it, its trail event and pushes it). "" when it waits, else the error it fails with."""
    problem = _pend(item.call, ask)
    if not problem:
        item.kind = AuditEvent.Kind.PROPOSED
        item.payload |= _asked(item.call) | revisions.link_revision(item.call)  # asked again after a decline
    return problem


@transaction.atomic
def question_from_execution(call: ToolCall, ask: Ask) -> str:
    """An approved call asked while it ran: back to pending, as a question, in a new review round when a
    reviewer's approval settled the one before. "" when it waits, else the error it fails with."""
    problem = _pend(call, ask)
    if problem:
        return problem
    if call.decisions.filter(round=call.review_round, final=True).exists():
        call.review_round += 1
    revised = revisions.link_revision(call)
    fields = {
        "revision_of": call.revision_of,
        "revision": call.revision,
        "kind": call.kind,
        "question": call.question,
        "status": call.status,
        "required_approvals": 1,
        "review_round": call.review_round,
        "claimed_at": None,
        "expires_at": call.expires_at,
        "warn_at": call.warn_at,
        "warned_at": None,
        **UNCLAIM,
    }
    if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.EXECUTING).update(**fields):
        return ""  # another worker took it over meanwhile, and asks itself
    audit.record(AuditEvent.Kind.PROPOSED, tool_call=call, payload=_asked(call) | revised)
    live.call_changed(call.pk)
    return ""


def question_from_proposal(item: Gated, question: dict) -> None:
    """A remote agent's proposal asks (it carries a question): the call, as the gate left it, waits as a question
    whatever its tier, stored so by the step's transaction with one trail event. The agent reads the answer in
    the decision and never executes the call."""
    call = item.call
    problem = _pend(call, Ask(question.get("prompt", ""), question["schema"], question.get("payload")), fresh=False)
    if problem:
        raise AnswerRefused({"question": [problem]})
    item.kind = AuditEvent.Kind.PROPOSED
    item.payload |= _asked(call)


@transaction.atomic
def question_from_agent(*, call: ToolCall, question: dict) -> None:
    """A remote agent's tool asks (its proposal carries a question): the call, as the gate stored it, waits
    as a question whatever its tier. The agent reads the answer in the decision and never executes the call."""
    problem = _pend(call, Ask(question.get("prompt", ""), question["schema"], question.get("payload")))
    if problem:
        raise AnswerRefused({"question": [problem]})
    fields = {"kind": call.kind, "question": call.question, "status": call.status, "required_approvals": 1}
    fields |= {"expires_at": call.expires_at, "warn_at": call.warn_at, "warned_at": None}
    ToolCall.objects.filter(pk=call.pk).update(**fields)
    audit.record(AuditEvent.Kind.PROPOSED, tool_call=call, payload=_asked(call))
    live.call_changed(call.pk)


def answer_output(call: ToolCall, answer) -> str:
    """How the answer reads to the model: the tool's own wording (Tool.answered), else the answer as JSON."""
    tool = registry.for_call(call)
    if tool is None:
        return answer_json(answer)
    try:
        args = tool.parse(call.review_arguments)
    except ArgumentsInvalid:
        args = None
    output = tool.answer_output(args, answer)
    if call.arguments is not None and call.approved_arguments not in (None, call.arguments):
        output = f"{edit_summary(call.arguments, call.approved_arguments)}\nResult: {output}"  # as execution says
    return output


def _store(call: ToolCall, reviewer: User, answer) -> Decision:
    try:
        with transaction.atomic():
            return Decision.objects.create(
                tool_call=call,
                reviewer=reviewer,
                verdict=Decision.Verdict.ANSWER,
                arguments=answer,
                arguments_hash=args_hash(answer),
                round=call.review_round,
                final=True,
            )
    except IntegrityError:
        call.refresh_from_db()
        raise AlreadyDecided(call, call.final_decision())


def toolcall_answer(*, call_id: int, reviewer: User, shown_hash: str, answer) -> Decision:
    """Answer a pending question: lock, check (pending, may decide, the question shown is the question),
    validate against its schema, store the one final decision, record the answer as the tool's output,
    resume on commit. A wrong answer is refused field by field and changes nothing."""
    with transaction.atomic():
        call = _locked_pending(call_id, reviewer, shown_hash)
        if call.kind != ToolCall.Kind.QUESTION:
            raise NotAllowed("This call asks no question; approve or reject it instead.")
        try:
            answer = validated_answer(call.question, answer)
        except AnswerInvalid as exc:
            raise AnswerRefused(exc.errors)
        decision = _store(call, reviewer, answer)
        output = answer_output(call, answer)
        payload = {
            "verdict": decision.verdict,
            "question_shown_hash": shown_hash,
            "answer": answer,
            "answer_hash": decision.arguments_hash,
            "output": output,
            "round": call.review_round,
            "final": True,
        }
        audit.record(AuditEvent.Kind.DECIDED, tool_call=call, actor=reviewer, payload=payload)
        now = timezone.now()
        ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXECUTED, executed_at=now, **UNCLAIM)
        record_output(call=call, output=output)
        shadow_settle(call=call, verdict=decision.verdict)
        request_resume(call.run_id, decided=call.pk)
        live.call_changed(call.pk)
    return decision
