"""The write path every step, decision and execution takes: the trail in two statements, lean indexes."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from approvals import audit, services
from approvals.models import AuditEvent, AuditHead, Run

pytestmark = pytest.mark.django_db

POSTGRES = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's own SQL and indexes")
TRICKY = {"amount": 1e16, "zero": -0.0, "text": "naïve “quotes” \u2028 \\ backslash", "nested": [{"b": 1, "a": None}]}


@pytest.fixture
def run_with_no_events():
    """A run as services.run_create() leaves it, with no event in its chain yet."""
    return services.run_create(agent="support", request="Refund order A-1001.")


@POSTGRES
def test_events_are_appended_in_two_statements_however_many(run_with_no_events):
    entries = [audit.Entry(AuditEvent.Kind.RESUMED, payload={"step": i}) for i in range(5)]
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        events = audit.record_many(run_with_no_events, entries)
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(sql) == 2, sql
    assert sql[0].endswith("FOR UPDATE")
    stored = list(AuditEvent.objects.filter(run=run_with_no_events).order_by("pk"))[-5:]
    assert [e.pk for e in events] == [e.pk for e in stored]
    assert [e.payload["step"] for e in stored] == list(range(5))
    head = AuditHead.objects.get(chain=run_with_no_events.pk)
    assert (
        head.last_hash == stored[-1].hash and head.seq == AuditEvent.objects.filter(chain=run_with_no_events.pk).count()
    )
    assert not head.anchored


def test_a_payload_stored_by_the_fast_path_hashes_the_same_when_read_back(run_with_no_events):
    event = audit.record(AuditEvent.Kind.RESUMED, run=run_with_no_events, payload=TRICKY)
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.hash == event.hash and stored.hash_matches
    assert stored.payload["amount"] == 10**16 and stored.payload["zero"] == 0.0
    assert audit.verify().ok


def test_the_first_event_of_a_chain_makes_its_head():
    run = Run.objects.create(agent="support", request="Nothing recorded yet.")
    assert not AuditHead.objects.filter(chain=run.pk).exists()
    audit.record(AuditEvent.Kind.RESUMED, run=run, payload={"step": 1})
    head = AuditHead.objects.get(chain=run.pk)
    assert head.seq == 1 and head.last_hash == AuditEvent.objects.filter(run=run).order_by("pk").last().hash


def indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


@POSTGRES
def test_no_index_is_written_for_nothing():
    """Each index is written by every insert: none that no query uses, none a unique index already serves,
    and the columns most rows leave empty are indexed only where set."""
    event, message, call = indexes("approvals_auditevent"), indexes("approvals_message"), indexes("approvals_toolcall")
    assert not [sql for sql in event.values() if "(hash" in sql]  # random keys: a random index page per insert
    assert "(chain, id)" in event["auditevent_chain_order"]  # how an event's predecessor is found
    assert [sql for sql in message.values() if "(run_id)" in sql] == []  # message_unique_seq is (run_id, seq)
    assert [sql for sql in call.values() if "(run_id)" in sql] == []  # toolcall_unique_call_id is (run_id, call_id)
    partial = {"expires_at", "warn_at", "review_group_id", "reviewing_by_id", "revision_of_id"}
    for column in partial:
        defs = [sql for sql in call.values() if f"({column})" in sql]
        assert defs and all(f"WHERE ({column} IS NOT NULL)" in sql for sql in defs), (column, defs)
    assert all("IS NOT NULL" in sql for sql in event.values() if "(actor_id)" in sql)
    assert all("IS NOT NULL" in sql for sql in message.values() if "(written_by_id)" in sql)
