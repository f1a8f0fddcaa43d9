"""The agent loop against the shipped model server, over real HTTP."""

import pytest

from agents import loop
from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from shop.models import Customer, OrderNote, Refund
from tests.reviewing import approve_reply, decide

pytestmark = pytest.mark.django_db


def test_a_refund_over_the_limit_waits_for_a_person(make_run):
    run = make_run("Order A-1001 arrived broken. Please refund $490.")
    assert run.status == Run.Status.WAITING
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.PENDING
    assert call.description == "Refund $490.00 to Dana Smith for order A-1001 (order total $49.00)"
    assert Refund.objects.count() == 0


def test_parallel_calls_the_lookup_runs_and_the_run_waits_for_the_refund(make_run, reviewer, model):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    lookup, refund = run.tool_calls.order_by("id")
    assert lookup.tool_name == "get_order_status" and lookup.status == ToolCall.Status.EXECUTED
    assert refund.tool_name == "issue_refund" and refund.status == ToolCall.Status.PENDING
    assert run.status == Run.Status.WAITING
    assert len(model.requests()) == 1  # the model is not called while a call of the step has no output

    loop.advance(run.pk)  # a stray resumption changes nothing
    assert len(model.requests()) == 1

    decide(refund, reviewer)
    loop.advance(run.pk)

    run.refresh_from_db()
    assert run.status == Run.Status.WAITING  # the summary waits as a draft reply to the customer
    assert approve_reply(run, reviewer).status == Run.Status.COMPLETED
    assert Refund.objects.get().amount == 35
    second = model.requests()[1]["messages"]
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_messages} == {lookup.call_id, refund.call_id}
    assert "Refunded $35.00 on order A-1002" in tool_messages[-1]["content"]


def test_a_rejection_is_the_tools_output_and_the_model_goes_on(make_run, reviewer, model):
    run = make_run("Order A-1001 arrived broken. Please refund $490.")
    decide(run.tool_calls.get(), reviewer, "reject", reason="The order total is only $49.")
    loop.advance(run.pk)
    assert approve_reply(run, reviewer).status == Run.Status.COMPLETED
    tool_message = [m for m in model.requests()[1]["messages"] if m["role"] == "tool"][0]
    assert tool_message["content"] == "Rejected by reviewer: The order total is only $49."
    assert Refund.objects.count() == 0


def test_an_edit_runs_the_edited_arguments_and_the_model_is_told_what_changed(make_run, reviewer, model):
    run = make_run("Order A-1001 arrived broken. Please refund $490.")
    decide(
        run.tool_calls.get(),
        reviewer,
        "edit",
        arguments={"order_id": "A-1001", "amount": 49, "reason": "Item arrived damaged"},
    )
    loop.advance(run.pk)
    assert Refund.objects.get().amount == 49
    tool_message = [m for m in model.requests()[1]["messages"] if m["role"] == "tool"][0]
    assert "changed amount from 490 to 49" in tool_message["content"]
    assert "do not retry the original" in tool_message["content"]


def test_a_made_up_tool_gets_an_error_and_the_model_tries_a_real_one(make_run, model, reviewer):
    run = approve_reply(make_run("Cancel order A-1004, the customer changed their mind."), reviewer)
    assert run.status == Run.Status.COMPLETED
    made_up, note, _ = run.tool_calls.order_by("id")
    assert made_up.status == ToolCall.Status.INVALID
    assert note.tool_name == "add_order_note" and note.status == ToolCall.Status.EXECUTED
    assert OrderNote.objects.get().text == "Customer asked to cancel this order."
    assert not ToolCall.objects.filter(status=ToolCall.Status.PENDING).exists()


def test_a_forbidden_tool_named_by_the_model_does_nothing(make_run, reviewer):
    run = approve_reply(make_run("Please delete customer Dana, she asked us to."), reviewer)
    call = run.tool_calls.get(tool_name="delete_customer")
    assert call.status == ToolCall.Status.FORBIDDEN
    assert Customer.objects.count() == 4
    assert run.status == Run.Status.COMPLETED


def test_an_email_to_a_stranger_waits_and_once_approved_is_sent_through_django(make_run, reviewer, mailoutbox):
    run = make_run("Email Dana that her replacement has shipped.")
    call = run.tool_calls.get()
    assert call.facts["recipient"] == "NOT the address of any customer"
    decide(call, reviewer, "edit", arguments={**call.arguments, "to": "dana.smith@example.com"})
    loop.advance(run.pk)
    assert [m.to for m in mailoutbox] == [["dana.smith@example.com"]]


def test_model_server_errors_are_retried(make_run, model, reviewer):
    model.script({"error": 500}, {"malformed": True})
    run = approve_reply(make_run("Look up order A-1001."), reviewer)
    assert run.status == Run.Status.COMPLETED
    assert len(model.requests()) == 4


def test_a_model_that_keeps_failing_fails_the_run_with_the_error_and_retry_resumes_it(
    make_run, model, requester, reviewer
):
    model.script({"error": 503}, {"error": 503}, {"error": 503})
    run = make_run("Look up order A-1001.")
    assert run.status == Run.Status.FAILED
    assert "failed after 3 attempts" in run.last_error
    assert AuditEvent.objects.filter(run=run, kind="run_failed").exists()

    services.run_retry(run=run, user=requester)
    loop.advance(run.pk)
    run = approve_reply(run, reviewer)
    assert run.status == Run.Status.COMPLETED
    assert run.last_error == ""


def test_the_step_limit_stops_a_run_that_never_ends(make_run, model, settings):
    settings.AGENT_MAX_STEPS = 3
    lookup = {"tool_calls": [{"name": "get_order_status", "arguments": {"order_id": "A-1001"}}]}
    model.script(*[lookup] * 5)
    run = make_run("Look up order A-1001.")
    assert run.status == Run.Status.FAILED
    assert "step limit" in run.last_error
    assert run.step_count == 3


def test_the_transcript_is_appended_never_rewritten(make_run, reviewer):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    before = list(run.messages.order_by("seq").values_list("pk", "seq", "content"))
    decide(run.tool_calls.get(status="pending"), reviewer)
    loop.advance(run.pk)
    after = list(run.messages.order_by("seq").values_list("pk", "seq", "content"))
    assert after[: len(before)] == before
    assert [seq for _, seq, _ in after] == list(range(len(after)))


def test_every_step_is_in_the_audit_trail(make_run, reviewer):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    decide(run.tool_calls.get(status="pending"), reviewer)
    loop.advance(run.pk)
    approve_reply(run, reviewer)
    kinds = list(AuditEvent.objects.filter(run=run).values_list("kind", flat=True))
    # The draft reply: held, approved, sent, and the run resumed to end with it.
    reply = ["proposed", "decided", "executing", "executed", "resumed"]
    assert kinds == [
        "run_started",
        "auto_run",
        "proposed",
        "executed",  # the read-only lookup, run before its step was stored: one event for its run
        "decided",
        "executing",
        "executed",
        "resumed",
        *reply,
        "completed",
    ]
    decided = AuditEvent.objects.filter(run=run, kind="decided").first()
    assert decided.actor == reviewer
