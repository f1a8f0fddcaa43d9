"""A model reply the database cannot store as sent is answered by the gate, never a crash;
and any failure while advancing a run leaves it failed with the reason, never stuck."""

import json

import pytest

from agents import llm, loop
from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from approvals.services import ProposedCall
from tests.badinput import REFUND, propose
from tests.reviewing import approve_reply

pytestmark = pytest.mark.django_db

LONG_ID = "call_" + "x" * 300


def proposed(call_id="call_1", name="issue_refund", arguments=REFUND) -> ProposedCall:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ProposedCall(call_id=call_id, name=name, raw_arguments=raw)


def outputs(run) -> dict[str, str]:
    return dict(run.messages.filter(role="tool").values_list("tool_call_id", "content"))


def assert_transcript_is_consistent(run):
    """Every call id in the assistant's message is answered by a tool message with the same id, as the API wants."""
    asked = [c["id"] for m in run.messages.filter(role="assistant") for c in m.tool_calls]
    assert sorted(asked) == sorted(outputs(run)) == sorted(run.tool_calls.values_list("call_id", flat=True))


def test_a_call_id_longer_than_the_column_is_refused_and_stored_cut_short(run):
    propose(run, proposed(call_id=LONG_ID))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.INVALID
    assert len(call.call_id) == 200 and call.call_id.endswith("…")
    assert "its id is longer than 200 characters" in call.output
    assert_transcript_is_consistent(run)


def test_a_tool_name_longer_than_the_column_is_refused(run):
    propose(run, proposed(name="issue_refund" * 30))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.INVALID
    assert len(call.tool_name) == 200
    assert "its tool name is longer than 200 characters" in call.output
    assert_transcript_is_consistent(run)


def test_a_nul_character_in_the_tool_name_or_the_id_is_refused_and_stored_escaped(run):
    propose(run, proposed(call_id="call_\x001", name="issue\x00refund"))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.INVALID
    assert call.tool_name == "issue\\u0000refund" and call.call_id == "call_\\u00001"
    assert "NUL character" in call.output
    assert AuditEvent.objects.filter(tool_call=call, kind="invalid").exists()
    assert_transcript_is_consistent(run)


def test_a_nul_character_in_an_argument_is_refused_naming_the_field(run):
    propose(run, proposed(arguments={**REFUND, "reason": "dam\x00aged"}))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.INVALID
    assert "reason: Contains a NUL character (U+0000), which cannot be stored." in call.output
    assert "\x00" not in call.raw_arguments


def test_a_raw_nul_or_a_lone_surrogate_in_the_argument_text_is_refused(run):
    raw = json.dumps(REFUND, ensure_ascii=False)
    propose(
        run,
        proposed(call_id="call_1", arguments=raw.replace("damaged", "dam\x00aged")),
        proposed(call_id="call_2", arguments=raw.replace("damaged", "dam\ud800aged")),
    )
    first, second = run.tool_calls.order_by("call_id")
    assert first.status == second.status == ToolCall.Status.INVALID
    assert "NUL character" in first.output and "unpaired surrogate (U+D800)" in second.output
    assert first.raw_arguments.count("\\u0000") == 1


def test_a_nul_character_in_the_content_is_stored_escaped_and_the_call_goes_on(run):
    propose(run, proposed(), content="I will\x00 refund it \ud83d.")
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.PENDING
    assert call.reasoning == "I will\\u0000 refund it \\ud83d."
    assert run.messages.get(role="assistant").content == call.reasoning


def test_a_call_id_used_twice_is_refused_the_second_time(run):
    propose(run, proposed(), proposed(arguments={**REFUND, "amount": 41}))
    first, second = run.tool_calls.order_by("pk")
    assert first.call_id == "call_1" and first.status == ToolCall.Status.PENDING
    assert second.call_id != "call_1" and second.status == ToolCall.Status.INVALID
    assert "'call_1' is already used" in second.output
    propose(run, proposed(call_id="call_1", name="get_order_status", arguments={"order_id": "A-1001"}))
    assert run.tool_calls.order_by("pk").last().status == ToolCall.Status.INVALID


def test_an_empty_call_id_is_refused(run):
    propose(run, proposed(call_id=""))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.INVALID and call.call_id
    assert "has no id" in call.output
    assert_transcript_is_consistent(run)


def test_the_loop_carries_on_after_a_reply_it_cannot_store_as_sent(make_run, model):
    model.script(
        {"content": "Refund\x00", "tool_calls": [{"id": LONG_ID, "name": "issue_refund", "arguments": REFUND}]},
        {"content": "Sorry, retrying.", "tool_calls": [{"id": "call_2", "name": "issue_refund", "arguments": REFUND}]},
    )
    run = make_run("Order A-1001 arrived broken. Please refund $40.")
    assert run.status == Run.Status.WAITING and not run.thinking
    assert run.tool_calls.get(status=ToolCall.Status.PENDING).call_id == "call_2"
    second_request = model.requests()[1]["messages"]
    assert "its id is longer than 200 characters" in [m for m in second_request if m["role"] == "tool"][0]["content"]


def test_any_failure_while_advancing_a_run_leaves_it_failed_with_the_reason(make_run, model, monkeypatch):
    def explode(**kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(services, "model_reply_record", explode)
    run = make_run("Order A-1001 arrived broken. Please refund $40.")
    assert run.status == Run.Status.FAILED and not run.thinking
    assert run.last_error == "The run stopped on an unexpected error: RuntimeError: the disk is full"
    assert AuditEvent.objects.get(kind="run_failed", run=run).payload["error"] == run.last_error


def test_a_failed_run_can_be_retried_after_an_unexpected_error(make_run, model, monkeypatch, requester, reviewer):
    with monkeypatch.context() as patch:
        patch.setattr(services, "model_reply_record", lambda **kwargs: 1 / 0)
        run = make_run("Look up order A-1002.")
    assert run.status == Run.Status.FAILED
    services.run_retry(run=run, user=requester)
    loop.advance(run.pk)
    assert approve_reply(run, reviewer).status == Run.Status.COMPLETED


def test_an_unexpected_error_leaves_a_run_cancelled_meanwhile_cancelled(make_run, model, monkeypatch, requester):
    run = make_run("Look up order A-1002.", advance=False)

    def cancel_then_fail(*args, **kwargs):
        services.run_cancel(run=run, user=requester)
        raise RuntimeError("too late")

    monkeypatch.setattr(llm, "complete", cancel_then_fail)
    loop.advance(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.last_error == ""
