"""The audit trail: every step recorded, chained by hash, append-only, and checked by verify_audit."""

import math
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from agents import loop
from approvals import audit
from approvals.models import AuditEvent, AuditHead, Run
from tests.approvals.tampering import swap_ids, tampering
from tests.reviewing import post

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(db):
    """Seven events of one run, in order."""
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    return [audit.record("resumed", run=run, payload={"step": step, "amount": 12.5}) for step in range(7)]


def test_an_untouched_trail_verifies_and_reports_its_head(trail):
    check = audit.verify()
    assert check.ok and check.count == 7
    assert check.head == trail[-1].hash == AuditHead.objects.get().last_hash


def test_an_empty_trail_verifies(db):
    assert audit.verify().ok


def test_an_edited_event_is_named_by_its_id(trail):
    with tampering():
        AuditEvent.objects.filter(pk=trail[3].pk).update(payload={"step": 3, "amount": 1250})
    check = audit.verify()
    assert not check.ok
    assert check.broken_at == trail[3].pk
    assert f"event {trail[3].pk} was changed" in check.problem


def test_an_edit_with_a_recomputed_hash_is_caught_at_the_next_event(trail):
    with tampering():
        event = AuditEvent.objects.get(pk=trail[3].pk)
        event.actor_label = "someone else"
        AuditEvent.objects.filter(pk=event.pk).update(actor_label=event.actor_label, hash=event.compute_hash())
    check = audit.verify()
    assert check.broken_at == trail[4].pk
    assert f"does not follow event {trail[3].pk}" in check.problem


def test_a_deleted_event_is_caught_at_the_event_after_it(trail):
    with tampering():
        AuditEvent.objects.filter(pk=trail[3].pk).delete()
    check = audit.verify()
    assert check.broken_at == trail[4].pk
    assert f"event {trail[4].pk} does not follow event {trail[2].pk}" in check.problem


def test_a_deleted_first_event_is_caught(trail):
    with tampering():
        AuditEvent.objects.filter(pk=trail[0].pk).delete()
    check = audit.verify()
    assert check.broken_at == trail[1].pk
    assert "does not follow the start of the trail" in check.problem


def test_deleting_the_last_event_is_caught_against_the_head(trail):
    with tampering():
        AuditEvent.objects.filter(pk=trail[-1].pk).delete()
    check = audit.verify()
    assert check.broken_at == trail[-2].pk
    assert f"the newest events, after event {trail[-2].pk}, were deleted" in check.problem


def test_deleting_every_event_is_caught_against_the_head(trail):
    with tampering():
        AuditEvent.objects.all().delete()
    check = audit.verify()
    assert not check.ok and "the trail is empty" in check.problem


def test_two_swapped_events_are_caught(trail):
    with tampering():
        swap_ids(trail[2].pk, trail[3].pk)
    check = audit.verify()
    assert check.broken_at == trail[2].pk
    assert f"event {trail[2].pk} does not follow event {trail[1].pk}" in check.problem


def test_an_anchor_written_down_earlier_must_still_be_in_the_trail(trail):
    assert audit.verify(anchor=trail[4].hash).ok
    assert "anchor" in audit.verify(anchor="f" * 64).problem


def test_verify_reads_the_trail_in_chunks_not_all_at_once(trail):
    with CaptureQueriesContext(connection) as queries:
        assert audit.verify(chunk_size=2).ok
    walks = [q["sql"] for q in queries if "approvals_auditevent" in q["sql"]]
    assert len(walks) == 4  # 2 + 2 + 2 + 1 events
    assert all("LIMIT 2" in sql for sql in walks)


def test_the_verify_audit_command_reports_an_intact_trail(trail):
    out = StringIO()
    call_command("verify_audit", "--chunk-size", "3", stdout=out)
    assert "Audit trail intact: 7 events verified" in out.getvalue()
    assert trail[-1].hash in out.getvalue()


def test_the_verify_audit_command_fails_and_names_the_event(trail):
    with tampering():
        AuditEvent.objects.filter(pk=trail[5].pk).update(kind="decided")
    with pytest.raises(CommandError, match=f"BROKEN \\(event {trail[5].pk}\\) after 5 good events"):
        call_command("verify_audit")


def test_numbers_that_jsonb_rewrites_still_verify(db):
    audit.record("resumed", payload={"big": 1e16, "huge": 1.5e300, "tiny": 1e-7, "minus_zero": -0.0, "nan": math.nan})
    assert audit.verify().ok


def test_update_and_delete_on_the_audit_table_are_refused_by_postgresql(require_postgres, trail):
    for statement in ("UPDATE approvals_auditevent SET kind = 'decided'", "DELETE FROM approvals_auditevent"):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=trail[0].pk).update(actor_label="mallory")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.get(pk=trail[0].pk).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditHead.objects.all().delete()
    assert AuditEvent.objects.count() == 7 and audit.verify().ok


def test_every_step_of_a_reviewed_call_is_an_event_with_what_was_shown_and_what_ran(
    client, make_run, reviewer, reviewer2
):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = run.tool_calls.get(status="pending")
    client.force_login(reviewer)
    # A forged reviewer in the form changes nothing: the session says who decides.
    post(client, call, "approve", reviewer=reviewer2.pk, actor="bob")
    loop.advance(run.pk)
    call.refresh_from_db()
    events = {e.kind: e for e in AuditEvent.objects.filter(tool_call=call)}
    assert list(events) == ["proposed", "decided", "executing", "executed"]
    proposed = events["proposed"].payload
    assert proposed["facts"] == call.facts and proposed["description"] == call.description
    assert proposed["policy"]["action"] == "review" and proposed["arguments_hash"] == call.arguments_hash
    decided = events["decided"]
    assert decided.actor == reviewer and decided.actor_label == "alice"
    assert decided.payload["verdict"] == "approve" and decided.payload["arguments"] == call.arguments
    executing = events["executing"].payload
    assert executing["arguments"] == call.approved_arguments
    assert executing["idempotency_key"] == call.idempotency_key
    assert events["executed"].payload["output"] == call.output
    assert AuditEvent.objects.filter(run=run, kind="resumed").exists()
    assert audit.verify().ok


def test_a_call_chain_checks_each_event_and_what_ran_against_what_was_approved(make_run, reviewer):
    from approvals import services

    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = run.tool_calls.get(status="pending")
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    loop.advance(run.pk)
    chain = audit.call_chain(call)
    assert [s.event.kind for s in chain.steps] == ["proposed", "decided", "executing", "executed"]
    assert chain.intact and chain.ran_as_approved is True
    assert all(step.previous_id is not None for step in chain.steps)
