"""Which indexes an audit event writes, and that the queries which need one still find theirs
(approvals/models/audit.py, migration 0020). Each index entry is PostgreSQL CPU and WAL on every event."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, OuterRef

from approvals import audit
from approvals.models import GLOBAL_CHAIN, ROUTINE_KINDS, AuditEvent, Run


def plan(queryset) -> str:
    """PostgreSQL's plan, sequential scans made as costly as they can be: an index that can serve it, will."""
    sql, params = queryset.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def an_event_of_the_global_chain_naming(run: Run) -> AuditEvent:
    """As recorded before chains were per run (migration 0006): in the global chain, naming its run."""
    event = AuditEvent(run=run, kind="resumed", actor_label="system", chain=GLOBAL_CHAIN, prev_hash=audit.GENESIS_HASH)
    event.hash = event.compute_hash()
    event.save()
    return event


@pytest.mark.django_db
def test_a_runs_events_are_its_chain_and_its_events_from_before_chains_were_per_run():
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    other = Run.objects.create(agent="support", request="Another.")
    audit.record("run_started", run=run)
    audit.record("run_started", run=other)
    audit.record("anchor")  # the global chain, naming no run
    legacy = an_event_of_the_global_chain_naming(run)
    mine = AuditEvent.objects.filter(audit.of_run(run.pk))
    assert set(mine.values_list("run_id", flat=True)) == {run.pk}
    assert mine.count() == 2 and legacy in mine
    assert set(mine.values_list("pk", flat=True)) == set(
        AuditEvent.objects.filter(run=run).values_list("pk", flat=True)
    )
    later = AuditEvent.objects.filter(audit.of_run(OuterRef("pk")), kind="run_started")
    assert set(Run.objects.filter(Exists(later)).values_list("pk", flat=True)) == {run.pk, other.pk}


@pytest.mark.django_db
def test_an_event_writes_four_index_entries_and_the_partial_ones_only_for_their_few(require_postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, i.indpred IS NOT NULL FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = 'approvals_auditevent'::regclass"""
        )
        indexes = dict(cursor.fetchall())
    full = {name for name, partial in indexes.items() if not partial}
    assert len(full) == 4, full  # the primary key, (chain, id), created_at, tool_call_id: not run_id nor kind
    assert "auditevent_chain_order" in full and "approvals_auditevent_pkey" in full
    assert not any(name.startswith("approvals_auditevent_run_id") for name in indexes)
    assert {"auditevent_global_run", "auditevent_rare_kind"} <= {name for name, partial in indexes.items() if partial}


@pytest.mark.django_db
def test_a_runs_events_are_found_by_an_index_not_a_walk_of_the_trail(require_postgres):
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    audit.record("run_started", run=run)
    found = plan(AuditEvent.objects.filter(audit.of_run(run.pk), kind="resumed"))
    assert "auditevent_chain_order" in found and "auditevent_global_run" in found
    assert "Seq Scan on approvals_auditevent" not in found
    later = AuditEvent.objects.filter(audit.of_run(OuterRef("pk")), kind="resumed")
    found = plan(Run.objects.filter(Exists(later)))
    assert "Seq Scan on approvals_auditevent" not in found


@pytest.mark.django_db
def test_the_kinds_looked_for_across_the_trail_are_in_the_rare_kinds_index(require_postgres):
    for kind in ("anchor", "unreported", "not_claimed", "run_failed", "outcome_unknown", "expired"):
        assert kind not in ROUTINE_KINDS
        found = plan(AuditEvent.objects.filter(kind=kind).order_by("-created_at")[:50])
        assert "auditevent_rare_kind" in found, (kind, found)


def test_the_routine_kinds_are_kinds():
    assert set(ROUTINE_KINDS) <= set(AuditEvent.Kind.values)


@pytest.mark.django_db
def test_the_database_refuses_deleting_a_run_named_only_by_an_event_from_before_chains_were_per_run(
    require_postgres,
):
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    an_event_of_the_global_chain_naming(run)
    with pytest.raises(DatabaseError, match="is in the audit trail"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM approvals_run WHERE id = %s", [run.pk])
    assert Run.objects.filter(pk=run.pk).exists()
