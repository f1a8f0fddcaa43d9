"""Anchoring: the heads of the run chains written into the global chain, and checked by verify_audit."""

import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals import audit
from approvals.audit import anchors
from approvals.models import GLOBAL_CHAIN, AuditEvent, AuditHead, Run
from tests.approvals.tampering import tampering

pytestmark = pytest.mark.django_db


def a_run(events: int = 5) -> Run:
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    for step in range(events):
        audit.record("resumed", run=run, payload={"step": step})
    return run


def anchor_events():
    return AuditEvent.objects.filter(kind=AuditEvent.Kind.ANCHOR).order_by("pk")


def rewrite(run: Run, *, keep: int, payloads: list[dict]) -> None:
    """What a database writer does to hide a change: replace the run's events after the first `keep` with
    new ones, each correctly chained, and move its head row on to match."""
    events = list(AuditEvent.objects.filter(chain=run.pk).order_by("pk"))
    previous = events[keep - 1].hash if keep else audit.GENESIS_HASH
    with tampering():
        AuditEvent.objects.filter(pk__in=[event.pk for event in events[keep:]]).delete()
        for payload in payloads:
            event = AuditEvent(run=run, kind="resumed", actor_label="system", payload=payload, prev_hash=previous)
            event.chain, event.created_at = run.pk, events[-1].created_at
            event.hash = event.compute_hash()
            event.save()
            previous = event.hash
    AuditHead.objects.filter(chain=run.pk).update(last_hash=previous, seq=keep + len(payloads))


def test_a_whole_run_rewritten_with_its_head_is_caught_by_its_anchor():
    run, _ = a_run(), a_run()
    assert anchors.anchor_heads() == 2
    rewrite(run, keep=2, payloads=[{"step": 2, "amount": 900}, {"step": 3}, {"step": 4}])

    fields = ("id", "chain", *audit.HASHED_FIELDS, "hash")
    alone = audit.in_chunks(AuditEvent.objects.filter(chain=run.pk), fields)
    assert audit.check_rows(alone, heads={run.pk: audit.head_hash(run.pk)}).ok  # the run agrees with its head
    check = audit.verify()
    assert not check.ok
    anchor = anchor_events().get()
    assert f"run {run.pk} was rewritten: anchor event {anchor.pk} recorded 5 events ending in hash" in check.problem
    assert "but before it that run's chain has 2, ending in event" in check.problem
    assert check.broken_at == AuditEvent.objects.filter(chain=run.pk).order_by("pk")[1].pk
    with pytest.raises(CommandError, match=f"run {run.pk} was rewritten"):
        call_command("verify_audit", stdout=StringIO())


def test_a_run_rewritten_in_place_with_its_head_is_caught_by_its_anchor():
    run = a_run()
    anchors.anchor_heads()
    events = list(AuditEvent.objects.filter(chain=run.pk).order_by("pk"))
    previous = events[1].hash
    with tampering():  # the same rows, new contents, each hash recomputed and chained
        for event in events[2:]:
            event.payload, event.prev_hash = {**event.payload, "amount": 900}, previous
            event.hash = previous = event.compute_hash()
            AuditEvent.objects.filter(pk=event.pk).update(
                payload=event.payload, prev_hash=event.prev_hash, hash=event.hash
            )
    AuditHead.objects.filter(chain=run.pk).update(last_hash=previous)
    check = audit.verify()
    assert f"run {run.pk} was rewritten" in check.problem and f"ending in event {events[-1].pk}" in check.problem
    assert check.broken_at == events[-1].pk


def test_a_run_cut_short_with_its_head_is_caught_by_its_anchor():
    run = a_run()
    anchors.anchor_heads()
    rewrite(run, keep=3, payloads=[])
    check = audit.verify()
    assert not check.ok
    assert f"run {run.pk} was rewritten: anchor event {anchor_events().get().pk} recorded 5 events" in check.problem
    assert "that run's chain has 3" in check.problem


def test_an_unchanged_trail_with_anchors_verifies():
    first, second = a_run(3), a_run(2)
    audit.record("run_started", payload={"note": "an event of no run"})
    anchors.anchor_heads()
    audit.record("resumed", run=first, payload={"step": 3})
    anchors.anchor_heads()
    check = audit.verify()
    assert check.ok, check.problem
    assert check.anchored == 3  # first at 3 and at 4 events, second at 2
    out = StringIO()
    call_command("verify_audit", stdout=out)
    assert "with 3 anchored heads." in out.getvalue() and audit.head_hash(GLOBAL_CHAIN) in out.getvalue()
    assert {(head.chain, head.seq, head.anchored) for head in AuditHead.objects.exclude(chain=GLOBAL_CHAIN)} == {
        (first.pk, 4, True),
        (second.pk, 2, True),
    }


def test_anchoring_twice_with_nothing_changed_writes_nothing():
    run, _ = a_run(), a_run()
    assert anchors.anchor_heads() == 2
    assert anchors.anchor_heads() == 0
    assert anchor_events().count() == 1
    audit.record("resumed", run=run, payload={"step": 9})
    assert anchors.anchor_heads() == 1
    assert anchor_events().last().payload == {"heads": {str(run.pk): {"seq": 6, "hash": audit.head_hash(run.pk)}}}


def test_many_changed_chains_make_several_bounded_anchors_at_a_fixed_cost():
    for _ in range(7):
        a_run(1)
    assert anchors.anchor_heads(max_heads=3) == 7
    assert [len(event.payload["heads"]) for event in anchor_events()] == [3, 3, 1]
    for _ in range(5):
        a_run(1)
    with CaptureQueriesContext(connection) as few:
        assert anchors.anchor_heads(max_heads=10) == 5
    for _ in range(8):
        a_run(1)
    with CaptureQueriesContext(connection) as many:
        assert anchors.anchor_heads(max_heads=10) == 8
    assert len(many) == len(few)  # the same statements for 5 heads and for 8
    # One read of the heads (locked, skipping any another anchorer holds, where the database can: not SQLite).
    skip = "SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    reads = [q["sql"] for q in many if 'FROM "approvals_audithead"' in q["sql"] and skip in q["sql"]]
    assert len(reads) == 1
    assert audit.verify().ok


def test_beat_and_the_embedded_default_anchor_periodically(settings, monkeypatch):
    from agents import tasks
    from runtime import periodic

    entry = settings.CELERY_BEAT_SCHEDULE["anchor-audit-heads"]
    assert entry["task"] == tasks.anchor_audit.name and entry["schedule"] == settings.AUDIT_ANCHOR_SECONDS
    passes = []
    monkeypatch.setattr(tasks.anchors, "anchor_heads", lambda: passes.append("anchor"))
    work = {"anchor-audit-heads": settings.PERIODIC_WORK["anchor-audit-heads"]}
    sleeps = iter([None, None])
    monkeypatch.setattr(periodic.time, "sleep", lambda seconds: next(sleeps))
    monkeypatch.setattr(periodic.time, "monotonic", iter([0.0, settings.AUDIT_ANCHOR_SECONDS + 1.0]).__next__)
    settings.PERIODIC_WORK = work
    with pytest.raises(StopIteration):
        periodic.run_forever()
    assert passes == ["anchor"]  # once its first interval passed, not before


@pytest.mark.django_db(transaction=True)
def test_the_anchor_skips_a_run_being_written_without_waiting_and_takes_it_next_time(require_postgres):
    from django.db import transaction

    from tests.approvals.test_audit_concurrency import WAIT, hold_a_write

    busy, idle = a_run(1), a_run(1)
    holding, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=hold_a_write, args=(busy, holding, release))
    thread.start()
    try:
        assert holding.wait(WAIT)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '5s'")  # would fail if it waited for the busy run
            assert anchors.anchor_heads() == 1
        assert set(anchor_events().get().payload["heads"]) == {str(idle.pk)}
    finally:
        release.set()
        thread.join(WAIT)
    assert anchors.anchor_heads() == 1  # the busy run, with its new event
    assert anchor_events().last().payload["heads"][str(busy.pk)]["seq"] == 2
    assert audit.verify().ok


@pytest.mark.django_db(transaction=True)
def test_anchors_taken_while_writers_append_all_verify(require_postgres):
    runs = [a_run(1) for _ in range(4)]

    def write(run):
        try:
            for step in range(15):
                audit.record("resumed", run=run, payload={"step": step})
        finally:
            connection.close()

    writers = [threading.Thread(target=write, args=(run,)) for run in runs]
    for thread in writers:
        thread.start()
    anchored = 0
    while any(thread.is_alive() for thread in writers):
        anchored += anchors.anchor_heads()
    for thread in writers:
        thread.join(30)
    anchored += anchors.anchor_heads()
    check = audit.verify()
    assert check.ok, check.problem
    assert check.anchored == anchored and anchored >= len(runs)
