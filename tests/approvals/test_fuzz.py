"""Generated input to every door that takes it: the edit, reject, respond, answer, undo and new-run endpoints,
the admin's lists and exports, and the gate (as model replies).

What must hold for every input: no server error (no 5xx, no exception), no approval or execution
of arguments the tool's schema refuses, and no traceback in the logs but Django's own security
report of a 400. Each input runs in a transaction rolled back afterwards, so every one meets the
same pending call.

FUZZ_EXAMPLES is the number of generated inputs in all, shared evenly among the targets. The
normal test command runs a sample (300 inputs); the full run, with the count and time
of each target printed, is:

    FUZZ_EXAMPLES=10000 python -m pytest tests/approvals/test_fuzz.py -s
"""

import logging
import os
import time
from collections import Counter
from contextlib import contextmanager
from urllib.parse import quote

import pytest
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from approvals import services
from approvals.models import ToolCall
from approvals.services import ProposedCall
from tests.badinput import invalid_approvals, new_run, pending_question, propose

from . import fuzzing as f

TARGETS = 7  # the tests below
TOTAL = int(os.environ.get("FUZZ_EXAMPLES") or 300)
PER_TARGET = -(-TOTAL // TARGETS)
FULL = bool(os.environ.get("FUZZ_EXAMPLES"))

# The full run takes minutes per target: no per-test time limit then (pytest.ini's is 300 s).
pytestmark = [pytest.mark.django_db, pytest.mark.timeout(0 if FULL else 300)]

fuzz = settings(
    max_examples=PER_TARGET, deadline=None, database=None, suppress_health_check=list(HealthCheck), print_blob=True
)


@pytest.fixture
def door(caplog):
    """Runs each generated input in a transaction rolled back afterwards, and checks what must hold.

    `with door("edit") as answered:` hands the test a function that checks each response
    (or, for the gate, records each call's status) and counts the outcomes for the report.
    """
    outcomes: dict[str, Counter] = {}
    started = time.monotonic()

    @contextmanager
    def one(target: str):
        caplog.clear()
        counted = outcomes.setdefault(target, Counter())
        with transaction.atomic():
            yield lambda outcome: counted.update([_checked(outcome)])
            assert invalid_approvals() == []
            transaction.set_rollback(True)
        tracebacks = [r for r in caplog.records if _unexpected(r)]
        assert not tracebacks, [r.getMessage() for r in tracebacks]
        counted["inputs"] += 1

    yield one
    for target, counted in outcomes.items():
        inputs = counted.pop("inputs", 0)
        seen = ", ".join(f"{key}: {n}" for key, n in sorted(counted.items()))
        print(f"\nfuzz {target}: {inputs} inputs in {time.monotonic() - started:.0f} s, no server error ({seen})")
        if FULL:
            assert inputs >= PER_TARGET


def _unexpected(record: logging.LogRecord) -> bool:
    """A traceback or an error in the log, except Django's own security report of a suspicious request.

    Django answers those with a 400 and logs them, with a traceback, to "django.security.*" by design
    (a URL of over 16,384 characters that the admin's catch-all would redirect, for one).
    """
    if record.name.startswith("django.security.") and getattr(record, "status_code", None) == 400:
        return False
    return bool(record.exc_info) or record.levelno >= logging.ERROR


def _checked(outcome) -> str:
    """Not a server error; a streamed body is read to its end (an error there would cut it short)."""
    if isinstance(outcome, str):
        return outcome
    if outcome.streaming:
        b"".join(outcome.streaming_content)
    assert outcome.status_code < 500, outcome.status_code
    return str(outcome.status_code)


def hash_for(call: ToolCall, choice: str) -> str:
    return {"shown": call.review_hash, "stale": "0" * 64}.get(choice, choice)


@fuzz
@given(form=f.EDIT_FORMS, action=st.sampled_from(["call_edit", "call_changes"]), shown=f.HASHES, htmx=st.booleans())
@example(form={"arguments_json": "[" * 100_000}, action="call_edit", shown="shown", htmx=True)
@example(form={"arguments_json": '{"amount": ' + "9" * 5000 + "}"}, action="call_edit", shown="shown", htmx=False)
@example(form={"arg_reason": "dam\x00aged"}, action="call_edit", shown="shown", htmx=True)
def test_any_edit_is_answered_without_a_server_error(door, client, held_refund, form, action, shown, htmx):
    with door("edit") as answered:
        data = {**form, "arguments_hash": hash_for(held_refund, shown)}
        answered(client.post(reverse(f"approvals:{action}", args=[held_refund.pk]), data, headers=f.htmx(htmx)))


@fuzz
@given(
    action=st.sampled_from(["call_reject", "call_respond"]),
    reason=f.FORM_VALUES,
    guidance=st.none() | f.FORM_VALUES,
    shown=f.HASHES,
    htmx=st.booleans(),
)
@example(action="call_reject", reason="a\x00b", guidance=None, shown="shown", htmx=False)
@example(action="call_respond", reason="no", guidance="do\x00this", shown="shown", htmx=True)
def test_any_reject_or_respond_is_answered_without_a_server_error(
    door, client, held_refund, action, reason, guidance, shown, htmx
):
    with door("reject and respond") as answered:
        data = {"reason": reason, "arguments_hash": hash_for(held_refund, shown)}
        if guidance is not None:
            data["guidance"] = guidance
        answered(client.post(reverse(f"approvals:{action}", args=[held_refund.pk]), data, headers=f.htmx(htmx)))


@pytest.fixture
def held_question(shop, requester, reviewer, client):
    client.force_login(reviewer)
    return pending_question(requester)


@fuzz
@given(form=f.ANSWER_FORMS, shown=f.HASHES, htmx=st.booleans())
@example(form={"answer_order_id": "A-1005\x00"}, shown="shown", htmx=True)
@example(form={"answer_order_id": "A-1005", "answer_extra": "x"}, shown="shown", htmx=False)
def test_any_answer_is_answered_without_a_server_error(door, client, held_question, form, shown, htmx):
    with door("answer") as answered:
        data = {**form, "arguments_hash": hash_for(held_question, shown)}
        answered(client.post(reverse("approvals:call_answer", args=[held_question.pk]), data, headers=f.htmx(htmx)))


@pytest.fixture
def note(shop, requester, reviewer, client):
    """An executed reversible call: the one kind that can be undone."""
    client.force_login(reviewer)
    run = new_run(requester, "Add a note to order A-1004.")
    arguments = '{"order_id": "A-1004", "text": "Customer changed their mind."}'
    propose(run, ProposedCall(call_id="call_1", name="add_order_note", raw_arguments=arguments))
    services.toolcall_execute(call=run.tool_calls.get())
    return run.tool_calls.get(status=ToolCall.Status.EXECUTED)


@fuzz
@given(shape=f.UNDO_SHAPES, run_part=f.PATH_PARTS, call_part=f.PATH_PARTS, data=f.UNDO_FORMS)
@example(shape="/runs/{run}/action/", run_part="real", call_part="", data={"action": "undo", "call": "abc"})
@example(shape="/runs/{run}/calls/{call}/undo/", run_part="real", call_part="real", data={})
def test_any_undo_is_answered_without_a_server_error(door, client, note, shape, run_part, call_part, data):
    with door("undo") as answered:
        run_part = str(note.run_id) if run_part == "real" else run_part
        call_part = str(note.pk) if call_part == "real" else call_part
        answered(client.post(shape.format(run=run_part, call=call_part), data))


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@fuzz
@given(agent=st.sampled_from(["support"]) | f.FORM_VALUES, request=f.FORM_VALUES, dry_run=f.FORM_VALUES)
@example(agent="support", request="Refund\x00 order A-1001", dry_run="")
def test_any_new_run_is_answered_without_a_server_error(door, reviewer_client, agent, request, dry_run):
    with door("new run") as answered:
        data = {"agent": agent, "request": request, "dry_run": dry_run}
        answered(reviewer_client.post(reverse("agents:new_run"), data))


@fuzz
@given(page=f.ADMIN_PAGES, params=f.ADMIN_PARAMS, object_id=f.PATH_PARTS)
@example(page="auditevent/export.csv", params={"tool": "issue\x00refund"}, object_id="1")
@example(page="toolcall/", params={"reviewer": "²", "q": "9" * 5000}, object_id="1")
@example(page="auditevent/export.{id}", params={"tool": "[" * 100_000}, object_id="")
def test_any_admin_filter_or_export_is_answered_without_a_server_error(
    door, auditor_client, note, page, params, object_id
):
    with door("admin filters and exports") as answered:
        path = "/admin/approvals/" + page.format(id=quote(object_id, safe=""))
        answered(auditor_client.get(path, params))


@fuzz
@given(content=f.MODEL_TEXT, calls=f.CALL_LISTS)
@example(content="x\x00", calls=[ProposedCall("call_" + "x" * 300, "issue_refund\x00", '{"reason": "\\u0000"}')])
@example(content="", calls=[ProposedCall("c", "issue_refund", "[" * 100_000)] * 2)
def test_any_model_reply_goes_through_the_gate_without_an_error(door, run, content, calls):
    with door("gate") as answered:
        propose(run, *calls, content=content)
        for approved in run.tool_calls.filter(status=ToolCall.Status.APPROVED):
            services.toolcall_execute(call=approved)
        for status in run.tool_calls.values_list("status", flat=True):
            answered(status)
        assert not run.tool_calls.filter(status=ToolCall.Status.EXECUTING).exists()
