"""The audit trail's write path: a lock per run's chain, so writers on different runs never wait for each other."""

import threading

import pytest
from django.db import OperationalError, connection, transaction

from approvals import audit
from approvals.models import AuditEvent, AuditHead, Run
from tests.approvals.tampering import tampering

WAIT = 30  # seconds: a ceiling for the other thread, never a timing assertion


def hold_a_write(run: Run, holding: threading.Event, release: threading.Event) -> None:
    """In another connection: record an event on the run and keep the transaction open until released."""
    try:
        with transaction.atomic():
            audit.record("resumed", run=run, payload={"held": True})
            holding.set()
            release.wait(WAIT)
    finally:
        connection.close()


def record_with_lock_timeout(run: Run, timeout: str) -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{timeout}'")
        audit.record("resumed", run=run, payload={"second": True})


@pytest.fixture
def held(require_postgres):
    """Run one's chain is being written by an open transaction in another connection."""
    first, second = (Run.objects.create(agent="support", request=f"run {i}") for i in (1, 2))
    holding, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=hold_a_write, args=(first, holding, release))
    thread.start()
    assert holding.wait(WAIT)
    yield first, second
    release.set()
    thread.join(WAIT)


@pytest.mark.django_db(transaction=True)
def test_a_writer_on_another_run_appends_while_the_first_transaction_is_still_open(held):
    first, second = held
    record_with_lock_timeout(second, "5s")  # would fail if it had to wait for the first run's writer
    assert AuditEvent.objects.filter(run=second).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_second_writer_on_the_same_run_waits_for_the_first(held):
    first, _ = held
    with pytest.raises(OperationalError, match="lock timeout"):
        record_with_lock_timeout(first, "100ms")


@pytest.mark.django_db(transaction=True)
def test_each_run_has_its_own_chain_and_head_and_the_trail_verifies(require_postgres):
    runs = [Run.objects.create(agent="support", request=f"run {i}") for i in range(3)]
    for step in range(3):
        for run in runs:
            audit.record("resumed", run=run, payload={"step": step})
    heads = audit.heads()
    for run in runs:
        events = list(AuditEvent.objects.filter(run=run).order_by("pk"))
        assert [e.prev_hash for e in events[1:]] == [e.hash for e in events[:-1]]
        assert events[0].prev_hash == "0" * 64 and heads[run.pk] == events[-1].hash
    assert AuditHead.objects.count() == 3 and audit.verify().ok


@pytest.mark.django_db
def test_an_event_moved_to_another_runs_chain_is_caught(require_postgres):
    first, second = (Run.objects.create(agent="support", request=f"run {i}") for i in (1, 2))
    events = [audit.record("resumed", run=run, payload={"n": n}) for n in range(2) for run in (first, second)]
    with tampering():
        AuditEvent.objects.filter(pk=events[2].pk).update(chain=second.pk)
    check = audit.verify()
    assert not check.ok and check.broken_at == events[2].pk


@pytest.mark.django_db
def test_deleting_the_newest_event_of_one_run_is_caught_against_that_runs_head(require_postgres):
    first, second = (Run.objects.create(agent="support", request=f"run {i}") for i in (1, 2))
    events = [audit.record("resumed", run=run, payload={"n": n}) for n in range(2) for run in (first, second)]
    with tampering():
        AuditEvent.objects.filter(pk=events[2].pk).delete()  # the newest event of the first run
    check = audit.verify()
    assert check.broken_at == events[0].pk
    assert f"the newest events, after event {events[0].pk}, were deleted" in check.problem
