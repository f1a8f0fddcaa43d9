"""A model turn held for a person: the loop holds it, a reviewer continues, adds a note or writes the reply,
the loop applies the decision once; the decision is bound to the transcript shown; expiry fails closed."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from agents import loop
from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import AuditEvent, Decision, Message, Run, ToolCall, TurnRule, TurnShadow

from . import support
from .reviewing import approve_reply

pytestmark = pytest.mark.django_db

LOOKUP = "Check the status of order A-1002."


def first_turn_rule(**fields) -> TurnRule:
    return TurnRule.objects.create(name="First turns", every_turn=True, until_step=1, **fields)


def held(run: Run) -> ToolCall:
    run.refresh_from_db()
    return run.tool_calls.get(kind=ToolCall.Kind.TURN, status=ToolCall.Status.PENDING)


def decide(call: ToolCall, reviewer, verdict: str = "approve", text: str = "") -> Decision:
    return services.turn_decide(
        call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, text=text
    )


def assert_valid_openai_transcript(run: Run) -> None:
    rows = list(run.messages.order_by("seq"))
    assert not [m for m in rows if m.role == "tool" and m.tool_call_id.startswith("turn-")]
    asked = {c["id"] for m in rows for c in m.tool_calls}
    assert {m.tool_call_id for m in rows if m.role == "tool"} <= asked


def test_a_matching_rule_holds_the_turn_before_the_model_is_called_and_the_run_holds_no_process(make_run, model):
    first_turn_rule()
    run = make_run(LOOKUP)
    call = held(run)
    assert model.requests() == []
    assert run.status == Run.Status.WAITING and not run.thinking and run.step_count == 0
    assert call.call_id == "turn-1" and call.tool_name == "model turn"
    assert call.arguments["step"] == 1
    transcript = list(run.messages.order_by("seq"))
    assert call.arguments["transcript_sha256"] == services.turns.transcript_hash(transcript)
    assert call.review_hash == args_hash(call.arguments)
    assert call.message == transcript[-1] and call.user_request == LOOKUP
    assert call.expires_at is not None and "Model turn 1" in call.description
    assert AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.PROPOSED).exists()


def test_a_stray_resumption_of_a_held_turn_changes_nothing(make_run, model):
    first_turn_rule()
    run = make_run(LOOKUP)
    loop.advance(run.pk)
    loop.advance(run.pk)
    call = held(run)
    assert run.status == Run.Status.WAITING and run.step_count == 0 and not run.thinking
    assert run.tool_calls.count() == 1 and call.status == ToolCall.Status.PENDING
    assert model.requests() == []


def test_continue_calls_the_model_on_the_transcript_reviewed_once(
    make_run, model, reviewer, django_capture_on_commit_callbacks
):
    first_turn_rule()
    run = make_run(LOOKUP)
    call = held(run)
    with django_capture_on_commit_callbacks(execute=True):
        decide(call, reviewer)
    assert support.resumed == [run.pk]
    loop.advance(run.pk)
    loop.advance(run.pk)
    run = approve_reply(run, reviewer)  # its answer waited as the reply to the customer
    call.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    assert call.status == ToolCall.Status.EXECUTED
    assert len(model.requests()) == 2  # turn 1 (reviewed) and turn 2 (no rule)
    assert [m["role"] for m in model.requests()[0]["messages"]] == ["system", "user"]
    assert AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.EXECUTED).count() == 1
    assert_valid_openai_transcript(run)


def test_the_model_reads_the_note_before_it_answers_and_the_note_is_the_reviewers(make_run, model, reviewer):
    first_turn_rule()
    run = make_run(LOOKUP)
    decide(held(run), reviewer, "note", "Look up order A-1003 instead.")
    loop.advance(run.pk)
    loop.advance(run.pk)
    sent = model.requests()[0]["messages"]
    assert sent[-1] == {"role": "system", "content": "Note from reviewer alice: Look up order A-1003 instead."}
    assert run.tool_calls.get(tool_name="get_order_status").arguments == {"order_id": "A-1003"}
    notes = Message.objects.filter(run=run, written_by=reviewer)
    assert notes.count() == 1 and notes.get().role == "system"
    run = approve_reply(run, reviewer)  # its answer waited as the reply to the customer
    assert run.status == Run.Status.COMPLETED
    assert_valid_openai_transcript(run)


def test_a_reply_written_by_the_reviewer_completes_the_run_without_calling_the_model(make_run, model, reviewer):
    first_turn_rule()
    run = make_run(LOOKUP)
    decide(held(run), reviewer, "reply", "Your order A-1002 was delivered on Monday.")
    loop.advance(run.pk)
    loop.advance(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    assert model.requests() == []
    last = run.messages.order_by("seq").last()
    assert (last.role, last.content, last.written_by) == (
        "assistant",
        "Your order A-1002 was delivered on Monday.",
        reviewer,
    )
    assert run.messages.filter(written_by=reviewer).count() == 1
    assert run.audit_events.filter(kind=AuditEvent.Kind.COMPLETED).count() == 1


def test_a_decision_bound_to_a_stale_transcript_hash_is_refused(make_run, reviewer):
    first_turn_rule()
    call = held(make_run(LOOKUP))
    stale = args_hash({"step": 1, "transcript_sha256": "0" * 64})
    with pytest.raises(services.StaleView):
        services.turn_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=stale)
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING and not call.decisions.exists()


def test_a_transcript_that_changed_after_the_review_is_not_sent_and_the_run_fails(make_run, model, reviewer):
    first_turn_rule()
    run = make_run(LOOKUP)
    decide(held(run), reviewer)
    services.message_append(run=run, role="user", content="Something slipped in.")
    loop.advance(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and "transcript changed" in run.last_error
    assert model.requests() == []


def test_a_second_decision_on_a_turn_gets_already_decided(make_run, reviewer, reviewer2):
    first_turn_rule()
    call = held(make_run(LOOKUP))
    decide(call, reviewer)
    with pytest.raises(services.AlreadyDecided, match="^Already continued by alice"):
        decide(call, reviewer2, "reply", "Hello")


def test_each_kind_of_pause_names_its_verdicts_as_its_card_does():
    def label(kind: str, verdict: str) -> str:
        return Decision(verdict=verdict).label_for(kind)

    assert label("turn", "approve") == "Continued" and label("turn", "note") == "Continued with a note"
    assert label("checkpoint", "reject") == "Sent back" and label("checkpoint", "approve") == "Approved"
    assert label("question", "reject") == "Declined" and label("question", "answer") == "Answered"
    assert label("call", "approve") == "Approved" and label("call", "reject") == "Rejected"


def test_an_empty_note_or_reply_is_refused_with_a_field_error(make_run, reviewer):
    first_turn_rule()
    call = held(make_run(LOOKUP))
    for verdict in ("note", "reply"):
        with pytest.raises(services.EditInvalid) as caught:
            decide(call, reviewer, verdict, "   ")
        assert list(caught.value.errors) == [verdict]
    call.refresh_from_db()
    assert call.is_pending


def test_a_turn_cannot_be_approved_or_rejected_as_a_tool_call(make_run, reviewer):
    first_turn_rule()
    call = held(make_run(LOOKUP))
    for verdict in ("approve", "reject"):
        with pytest.raises(services.NotAllowed):
            services.toolcall_decide(
                call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, reason="no"
            )
    assert call.run.messages.filter(role="tool").count() == 0


def test_the_requester_and_reviewers_outside_the_rules_group_may_not_decide(make_run, reviewer, requester, senior):
    first_turn_rule(group=Group.objects.get(name="senior"))
    call = held(make_run(LOOKUP))
    assert call.review_group.name == "senior"
    for person in (requester, reviewer):
        with pytest.raises(services.NotAllowed):
            decide(call, person)
    decide(call, senior)


def test_an_expired_turn_fails_the_run_and_a_retry_holds_the_turn_again(make_run, model, reviewer):
    first_turn_rule()
    run = make_run(LOOKUP)
    call = held(run)
    services.toolcall_expire(call_id=call.pk, now=timezone.now() + timedelta(days=2))
    run.refresh_from_db()
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXPIRED
    assert run.status == Run.Status.FAILED and "Nobody reviewed model turn 1 in time" in run.last_error
    assert run.messages.filter(role="tool").count() == 0
    loop.advance(run.pk)
    assert model.requests() == []

    services.run_retry(run=run, user=reviewer)
    loop.advance(run.pk)
    again = held(run)
    assert again.call_id == "turn-1-2" and again.arguments == call.arguments
    assert model.requests() == []


def test_a_shadow_rule_records_the_turns_it_would_have_held_and_holds_none(make_run, model):
    rule = TurnRule.objects.create(name="Refund talk (trial)", words="refund", shadow=True)
    run = make_run("Order A-1001 arrived broken. Please refund $490.")
    assert not run.tool_calls.filter(kind=ToolCall.Kind.TURN).exists()
    assert list(TurnShadow.objects.values_list("rule", "run", "step")) == [(rule.pk, run.pk, 1)]
    assert len(model.requests()) == 1


def test_a_turn_after_tool_outputs_is_held_with_the_tool_rows_as_its_transcript(make_run, model, reviewer):
    TurnRule.objects.create(name="Second turns", every_turn=True, from_step=2)
    run = make_run(LOOKUP)  # turn 1 looks the order up (read-only, runs at once); turn 2 is held
    call = held(run)
    assert call.arguments["step"] == 2 and run.step_count == 1
    assert call.message.role == "tool"
    decide(call, reviewer)
    loop.advance(run.pk)
    run = approve_reply(run, reviewer)  # its answer waited as the reply to the customer
    assert run.status == Run.Status.COMPLETED and run.step_count == 2
    assert_valid_openai_transcript(run)
