"""Tools that ask a person: the question pends, the answer is the tool's output once, the run goes on with it."""

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic import BaseModel

from agents import loop
from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import AuditEvent, Decision, Message, Run, Tier, ToolCall
from approvals.tools import Ask, Tool, ToolContext, registry

from .reviewing import approve_reply, decide, model_reply, propose

pytestmark = pytest.mark.django_db

WHICH = "I'm dana.smith@example.com, my item arrived broken, please refund it."


def answer(call: ToolCall, reviewer, value, shown_hash: str | None = None):
    return services.toolcall_answer(
        call_id=call.pk, reviewer=reviewer, shown_hash=shown_hash or call.review_hash, answer=value
    )


def outputs_of(call: ToolCall) -> list[str]:
    return list(
        Message.objects.filter(run=call.run, role="tool", tool_call_id=call.call_id).values_list("content", flat=True)
    )


@pytest.fixture
def question(make_run) -> ToolCall:
    run = make_run(WHICH)
    return run.tool_calls.get(tool_name="choose_order")


def test_a_tool_that_asks_leaves_a_pending_question_and_the_run_waits(question, model):
    assert question.kind == ToolCall.Kind.QUESTION and question.status == ToolCall.Status.PENDING
    assert question.question["prompt"] == "Which of Dana Smith's orders is the request about?"
    assert question.question["schema"]["properties"]["order_id"]["enum"] == ["A-1005", "A-1001"]
    assert [row["order"] for row in question.question["payload"]["rows"]] == ["A-1005", "A-1001"]
    assert question.expires_at is not None and not question.output_recorded
    assert question.review_hash == args_hash(question.question)
    assert question.current_description == "Question: Which of Dana Smith's orders is the request about?"
    question.run.refresh_from_db()
    assert question.run.status == Run.Status.WAITING
    asked = AuditEvent.objects.get(tool_call=question)
    assert asked.kind == AuditEvent.Kind.PROPOSED and asked.payload["question"] == question.question
    assert len(model.requests()) == 1


def test_the_answer_becomes_the_output_once_and_the_run_goes_on_with_it(question, reviewer, model):
    decision = answer(question, reviewer, {"order_id": "A-1001"})
    assert decision.verdict == Decision.Verdict.ANSWER and decision.arguments == {"order_id": "A-1001"}
    question.refresh_from_db()
    assert question.status == ToolCall.Status.EXECUTED
    assert outputs_of(question) == ['{"order_id": "A-1001", "chosen_by": "a reviewer"}']
    with pytest.raises(services.AlreadyDecided):
        answer(question, reviewer, {"order_id": "A-1005"})
    assert len(outputs_of(question)) == 1

    loop.advance(question.run_id)
    run = Run.objects.get(pk=question.run_id)
    lookup = run.tool_calls.get(tool_name="get_order_status")
    assert lookup.arguments == {"order_id": "A-1001"} and lookup.status == ToolCall.Status.EXECUTED
    refund = run.tool_calls.get(tool_name="issue_refund")
    assert refund.arguments["order_id"] == "A-1001" and refund.arguments["amount"] == 49.0
    assert refund.status == ToolCall.Status.PENDING and run.status == Run.Status.WAITING
    told = [m["content"] for m in model.requests()[1]["messages"] if m["role"] == "tool"]
    assert told == ['{"order_id": "A-1001", "chosen_by": "a reviewer"}']


def test_an_answer_to_a_question_no_longer_shown_is_refused_and_changes_nothing(question, reviewer):
    stale = args_hash({**question.question, "prompt": "Something else?"})
    with pytest.raises(services.StaleView):
        answer(question, reviewer, {"order_id": "A-1001"}, shown_hash=stale)
    with pytest.raises(services.StaleView):  # the arguments' hash is not the question's
        answer(question, reviewer, {"order_id": "A-1001"}, shown_hash=question.arguments_hash)
    question.refresh_from_db()
    assert question.status == ToolCall.Status.PENDING and not question.decisions.exists()


def test_a_wrong_answer_gets_a_field_error_and_changes_nothing(question, reviewer):
    with pytest.raises(services.AnswerRefused) as refused:
        answer(question, reviewer, {"order_id": "A-1002"})
    assert refused.value.errors == {"order_id": ["Choose one of the options."]}
    question.refresh_from_db()
    assert question.is_pending and not question.decisions.exists() and not outputs_of(question)


def test_a_question_is_answered_or_declined_never_approved(question, reviewer):
    with pytest.raises(services.NotAllowed):
        decide(question, reviewer, "approve")
    question.refresh_from_db()
    assert question.is_pending


def test_the_requester_may_not_answer_their_own_runs_question(question, requester):
    with pytest.raises(services.NotAllowed):
        answer(question, requester, {"order_id": "A-1001"})


def test_a_declined_question_tells_the_model_why_and_the_run_ends(question, reviewer, model):
    decide(question, reviewer, "reject", reason="Ask the customer for the order number.")
    assert outputs_of(question) == ["Declined by reviewer (no answer): Ask the customer for the order number."]
    loop.advance(question.run_id)
    run = approve_reply(Run.objects.get(pk=question.run_id), reviewer)  # the model answered: its reply waited
    assert run.status == Run.Status.COMPLETED
    assert not ToolCall.objects.filter(tool_name="get_order_status").exists()


def test_a_question_nobody_answers_expires_and_the_model_reads_so(question, model, reviewer):
    services.expire_overdue(now=timezone.now() + timedelta(days=2))
    question.refresh_from_db()
    assert question.status == ToolCall.Status.EXPIRED
    assert outputs_of(question)[0].startswith("Nobody answered the question in time")
    loop.advance(question.run_id)
    run = approve_reply(Run.objects.get(pk=question.run_id), reviewer)  # the model answered: its reply waited
    assert run.status == Run.Status.COMPLETED


def test_a_customer_with_one_order_gets_it_without_a_question(make_run):
    run = make_run("I'm lee.wong@example.com, my boots arrived broken, please refund them.")
    chosen = run.tool_calls.get(tool_name="choose_order")
    assert chosen.kind == ToolCall.Kind.CALL and chosen.status == ToolCall.Status.EXECUTED
    assert "A-1002" in chosen.output
    assert run.tool_calls.get(tool_name="issue_refund").arguments["order_id"] == "A-1002"


class ConfirmArgs(BaseModel):
    order_id: str


def confirm(args: ConfirmArgs, ctx: ToolContext):
    raise Ask(f"Send {args.order_id} by express?", {"type": "boolean", "title": "Express"}, {"order": args.order_id})


def confused(args: ConfirmArgs, ctx: ToolContext):
    return Ask("Which?", {"type": "no such type"})


ASKING = {
    "confirm_shipping": Tool("confirm_shipping", "Ship, asking.", ConfirmArgs, Tier.APPROVAL, confirm),
    "lookup_confused": Tool("lookup_confused", "Asks badly.", ConfirmArgs, Tier.READ_ONLY, confused),
}


@pytest.fixture
def asking_tools(monkeypatch):
    for tool in ASKING.values():
        monkeypatch.setitem(registry._tools, tool.name, tool)
    monkeypatch.setitem(registry._allowed, "support", (*registry.allowed("support"), *ASKING))


def test_an_approved_call_that_asks_while_it_runs_waits_as_a_question_in_a_new_round(run, reviewer, asking_tools):
    call = propose(run, "confirm_shipping", {"order_id": "A-1001"})
    decide(call, reviewer, "edit", arguments={"order_id": "A-1005"})
    services.toolcall_execute(call=call)
    call.refresh_from_db()
    assert (call.kind, call.status, call.review_round) == (ToolCall.Kind.QUESTION, ToolCall.Status.PENDING, 2)
    assert call.question["prompt"] == "Send A-1005 by express?" and call.expires_at is not None
    assert AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.PROPOSED).count() == 2
    services.toolcall_execute(call=call)  # a stray execution runs nothing
    answer(call, reviewer, True)  # the reviewer who approved the call may answer its question
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXECUTED
    (output,) = outputs_of(call)
    assert output.startswith("A human reviewer edited this call before it ran: changed order_id from 'A-1001'")
    assert output.endswith('\nResult: {"answer": true}')


def test_a_question_nobody_can_answer_fails_the_call_with_the_reason(run, asking_tools):
    calls = [services.ProposedCall("call_1", "lookup_confused", '{"order_id": "A-1001"}')]
    model_reply(run, "Let me see.", calls)
    call = run.tool_calls.get()
    assert (call.kind, call.status) == (ToolCall.Kind.CALL, ToolCall.Status.FAILED)
    assert call.output.startswith("Error: lookup_confused asked a question nobody can answer: its answer schema is")


def test_a_read_only_call_run_after_the_step_asks_in_its_first_round(run, reviewer, asking_tools, monkeypatch):
    read_only = replace(ASKING["confirm_shipping"], tier=Tier.READ_ONLY)
    monkeypatch.setitem(registry._tools, read_only.name, read_only)
    call = propose(run, "confirm_shipping", {"order_id": "A-1001"})  # approved by policy, run after the commit
    services.toolcall_execute(call=call)
    call.refresh_from_db()
    assert (call.kind, call.status, call.review_round) == (ToolCall.Kind.QUESTION, ToolCall.Status.PENDING, 1)
    answer(call, reviewer, False)
    assert outputs_of(call) == ['{"answer": false}']


def test_a_question_asked_and_its_answer_are_pushed_live(make_run, reviewer, monkeypatch):
    from approvals import live

    pushed = []
    monkeypatch.setattr(live, "call_changed", pushed.append)
    question = make_run(WHICH).tool_calls.get(tool_name="choose_order")
    assert pushed == [question.pk]  # asked: the queues get the new question
    answer(question, reviewer, {"order_id": "A-1001"})
    assert pushed == [question.pk, question.pk]  # answered: the card says so everywhere
