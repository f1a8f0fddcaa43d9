"""An audit event's run and call: no foreign-key constraint in the database (its check locked their rows at every
event's commit), and still never deleted while the trail names them (approvals/models/audit.py, migration 0019)."""

import threading

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError

from approvals import audit
from approvals.models import AuditEvent, Message, Run, ToolCall

WAIT = 30  # seconds: a ceiling for the other thread, never a timing assertion


def a_call(run: Run) -> ToolCall:
    message = Message.objects.create(run=run, seq=1, role="assistant", content="")
    return ToolCall.objects.create(run=run, message=message, call_id="call_1", tool_name="issue_refund")


def named_by_the_trail():
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    call = a_call(run)
    audit.record("proposed", run=run, tool_call=call, payload={"amount": 12})
    return run, call


@pytest.mark.django_db
def test_a_run_or_call_the_trail_names_is_not_deleted_through_the_orm():
    run, call = named_by_the_trail()
    with pytest.raises(ProtectedError):
        call.delete()
    with pytest.raises(ProtectedError):
        run.delete()


@pytest.mark.django_db
def test_the_database_refuses_deleting_a_run_or_call_the_trail_names(require_postgres):
    run, call = named_by_the_trail()
    for table, row in (("approvals_toolcall", call), ("approvals_run", run)):
        with pytest.raises(DatabaseError, match="is in the audit trail"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {table} WHERE id = %s", [row.pk])
    assert Run.objects.filter(pk=run.pk).exists() and ToolCall.objects.filter(pk=call.pk).exists()
    assert audit.verify().ok


@pytest.mark.django_db
def test_a_run_the_trail_does_not_name_can_still_be_deleted(require_postgres):
    named_by_the_trail()
    other = Run.objects.create(agent="support", request="Never started.")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM approvals_run WHERE id = %s", [other.pk])
    assert not Run.objects.filter(pk=other.pk).exists()


def hold_rows(run: Run, call: ToolCall, holding: threading.Event, release: threading.Event) -> None:
    """In another connection: lock the run's and the call's rows as a decision or the loop's step does."""
    try:
        with transaction.atomic():
            Run.objects.select_for_update().get(pk=run.pk)
            ToolCall.objects.select_for_update().get(pk=call.pk)
            holding.set()
            release.wait(WAIT)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_an_event_commits_while_another_transaction_holds_its_run_and_call(require_postgres):
    run, call = named_by_the_trail()
    holding, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=hold_rows, args=(run, call, holding, release))
    thread.start()
    try:
        assert holding.wait(WAIT)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '1s'")  # a foreign-key check would wait for the holder
            audit.record("review_claimed", run=run, tool_call=call, payload={"until": "later"})
    finally:
        release.set()
        thread.join(WAIT)
    assert AuditEvent.objects.filter(tool_call=call).count() == 2
    assert audit.verify().ok
