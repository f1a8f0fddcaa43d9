"""What appending to the trail costs on PostgreSQL: one statement for one event, its hash computed by PostgreSQL
over the same canonical JSON as Python's, so the chain verifies as before."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals import audit
from approvals.audit import store
from approvals.lib.hashing import canonical_json, event_canonical, event_canonical_around
from approvals.models import AuditEvent, AuditHead, Run
from tests import support

pytestmark = pytest.mark.django_db

AWKWARD = {"prev_hash": "", "text": 'quote " back \\ slash', "names": ["Zoë", "李", "🙂"], "amount": 12.5}


@pytest.fixture
def run_with_a_head(db):
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    audit.record("resumed", run=run)  # the chain's first event makes its head row
    return run


@pytest.fixture
def kept(monkeypatch):
    """This connection kept between tasks, as a worker's is (reviewhub/celery.py)."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 300)


def test_one_event_of_a_web_request_is_one_statement_not_prepared(require_postgres, run_with_a_head):
    with CaptureQueriesContext(connection) as queries:
        audit.record("resumed", run=run_with_a_head, payload={"step": 1})
    assert len(queries) == 1
    assert "FOR UPDATE" in queries[0]["sql"] and "INSERT INTO approvals_auditevent" in queries[0]["sql"]
    assert support.prepared_runs("INSERT INTO approvals_auditevent") == []  # its connection closes with the request


def test_one_event_is_one_statement(require_postgres, run_with_a_head, kept):
    audit.record("resumed", run=run_with_a_head, payload={"step": 0})  # prepares it on this connection
    with CaptureQueriesContext(connection) as queries:
        audit.record("resumed", run=run_with_a_head, payload={"step": 1})
    assert len(queries) == 1
    assert "FOR UPDATE" in queries[0]["sql"] and "INSERT INTO approvals_auditevent" in queries[0]["sql"]
    assert support.prepared_runs("INSERT INTO approvals_auditevent") == [2]  # prepared once per connection, run twice


def test_an_event_after_a_rolled_back_one_is_prepared_again(require_postgres, run_with_a_head, kept):
    support.nothing_prepared()  # so that the rolled-back block prepares it
    with pytest.raises(RuntimeError), transaction.atomic():
        audit.record("resumed", run=run_with_a_head, payload={"rolled back": True})
        raise RuntimeError("roll back")  # psycopg deallocates its statements at a rollback (approvals/lib/prepared.py)
    audit.record("resumed", run=run_with_a_head, payload={"kept": True})
    assert support.prepared_runs("INSERT INTO approvals_auditevent") == [1]
    payloads = [e.payload for e in AuditEvent.objects.filter(chain=run_with_a_head.pk).order_by("pk")]
    assert payloads[-1] == {"kept": True} and {"rolled back": True} not in payloads
    assert audit.verify().ok


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_the_statement_again(require_postgres, kept):
    run = Run.objects.create(agent="support", request="Refund order A-1001.")
    audit.record("resumed", run=run)
    audit.record("resumed", run=run, payload={"n": 1})
    connection.close()  # the next statement opens another connection, which has no prepared statements
    audit.record("resumed", run=run, payload={"n": 2})
    assert AuditHead.objects.get(chain=run.pk).seq == 3 and audit.verify().ok


def test_a_hash_postgresql_computed_is_the_hash_python_computes(require_postgres, run_with_a_head):
    event = audit.record("resumed", run=run_with_a_head, payload=AWKWARD)
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.hash == event.hash == stored.compute_hash()
    assert stored.prev_hash == AuditEvent.objects.filter(chain=run_with_a_head.pk).order_by("pk").first().hash
    assert AuditHead.objects.get(chain=run_with_a_head.pk).last_hash == event.hash
    assert audit.verify().ok


def test_events_appended_one_by_one_and_together_make_one_chain(run_with_a_head):
    audit.record("resumed", run=run_with_a_head, payload=AWKWARD)
    audit.record_many(run_with_a_head, [audit.Entry("resumed", payload={"n": n}) for n in range(3)])
    audit.record("resumed", run=run_with_a_head, payload={"last": True})
    check = audit.verify()
    assert check.ok and check.count == 6
    assert AuditHead.objects.get(chain=run_with_a_head.pk).seq == 6


def test_an_event_whose_guard_returns_no_row_is_not_appended(run_with_a_head):
    head = AuditHead.objects.get(chain=run_with_a_head.pk).last_hash
    nothing = ("UPDATE approvals_run SET status = status WHERE id = %s RETURNING id", [-1])
    assert audit.record_many(run_with_a_head, [audit.Entry("resumed")], only_if=nothing) == []
    assert AuditEvent.objects.filter(chain=run_with_a_head.pk).count() == 1
    assert AuditHead.objects.get(chain=run_with_a_head.pk).last_hash == head


def test_an_event_whose_guard_returns_a_row_is_appended_after_it(run_with_a_head):
    touched = ("UPDATE approvals_run SET status = 'waiting' WHERE id = %s RETURNING id", [run_with_a_head.pk])
    [event] = audit.record_many(run_with_a_head, [audit.Entry("resumed")], only_if=touched)
    run_with_a_head.refresh_from_db()
    assert run_with_a_head.status == "waiting" and AuditEvent.objects.get(pk=event.pk).hash == event.hash
    assert audit.verify().ok


def test_the_two_parts_around_prev_hash_make_the_canonical_json_python_hashes():
    fields = {
        "run_id": 7,
        "tool_call_id": None,
        "kind": "decided",
        "actor_id": 3,
        "actor_label": 'rita "the reviewer", "payload":{}',
        "created_at": timezone.now(),
    }
    before, after = event_canonical_around(**fields, payload_json=canonical_json(AWKWARD))
    assert before + "ab" * 32 + after == event_canonical(**fields, payload=AWKWARD, prev_hash="ab" * 32)


def test_a_turns_events_on_a_kept_connection_are_two_prepared_statements(require_postgres, run_with_a_head, kept):
    turn = [audit.Entry("resumed", payload={"n": n}) for n in range(3)]
    audit.record_many(run_with_a_head, turn)  # prepares the head's lock and the three events' statement
    with CaptureQueriesContext(connection) as queries:
        audit.record_many(run_with_a_head, turn)
    assert len(queries) == 2 and "FOR UPDATE" in queries[0]["sql"] and "WITH appended AS" in queries[1]["sql"]
    assert support.prepared_runs("FROM approvals_audithead WHERE chain") == [2]  # the head's lock
    assert support.prepared_runs("WITH appended AS") == [2]  # the three events' statement
    assert audit.verify().ok and AuditHead.objects.get(chain=run_with_a_head.pk).seq == 7


def test_a_long_turns_events_are_not_kept_prepared(require_postgres, run_with_a_head, kept):
    turn = [audit.Entry("resumed", payload={"n": n}) for n in range(store.PREPARED_UP_TO + 1)]
    with CaptureQueriesContext(connection) as queries:
        audit.record_many(run_with_a_head, turn)
    assert queries[-1]["sql"].lstrip().startswith("WITH appended AS")
    assert support.prepared_runs("WITH appended AS") == []
    assert audit.verify().ok
