"""What an approval's resumption does before the tool runs: the call, its checks, one statement that claims it and
records so; not the transcript."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import loop
from approvals import services
from approvals.models import AuditEvent, AuditHead, Run, ToolCall
from approvals.policy import snapshot as policy_snapshot
from approvals.services.transcript import record_output
from shop.models import Refund
from tests import support

REFUND_REQUEST = "Order A-1002 arrived broken. Please refund $35."


def claimed_at(sql: list[str]) -> int:
    """Where the claim is: the ORM's UPDATE, or on PostgreSQL the statement that also appends its event."""
    claims = ('UPDATE "approvals_toolcall" SET "status" = \'executing\'', "UPDATE approvals_toolcall SET status = ")
    return next(i for i, s in enumerate(sql) if any(claim in s for claim in claims) and "executing" in s)


def approved(make_run, reviewer) -> ToolCall:
    run = make_run(REFUND_REQUEST)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    return call


def test_the_tools_task_runs_an_approved_call_before_reading_the_transcript(make_run, reviewer):
    call = approved(make_run, reviewer)
    with CaptureQueriesContext(connection) as queries:
        loop.advance(call.run_id, only=loop.TOOLS)
    sql = [q["sql"] for q in queries.captured_queries]
    assert not any("approvals_message" in s for s in sql[: claimed_at(sql)])
    assert Refund.objects.count() == 1


def test_the_claim_and_the_executing_event_are_one_statement(require_postgres, make_run, reviewer):
    call = approved(make_run, reviewer)
    with CaptureQueriesContext(connection) as queries:
        loop.advance(call.run_id, only=loop.TOOLS)
    sql = [q["sql"] for q in queries.captured_queries]
    claim = sql[claimed_at(sql)]
    assert "INSERT INTO approvals_auditevent" in claim and "approvals_audithead" in claim
    assert not sql[claimed_at(sql) - 1].startswith(("SAVEPOINT", "BEGIN"))  # no block of its own: one statement
    assert AuditEvent.objects.filter(tool_call=call, kind="executing").count() == 1


def test_an_approved_call_runs_after_two_statements_of_ours_and_the_tools_facts(require_postgres, make_run, reviewer):
    call = approved(make_run, reviewer)
    policy_snapshot.current()
    with CaptureQueriesContext(connection) as queries:
        loop.advance(call.run_id, only=loop.TOOLS)
    sql = [q["sql"] for q in queries.captured_queries]
    ours = [s for s in sql[: claimed_at(sql)] if '"shop_' not in s]  # the refund's facts, fetched again, are its own
    # the call with its run, the policy's stamp, its decisions and no practice run; then the claim with its event
    assert len(ours) == 1
    assert "approvals_policystamp" in sql[0] and "practice_practicecall" in sql[0]


def test_on_a_workers_connection_the_read_and_the_claim_are_prepared_statements(
    require_postgres, make_run, reviewer, monkeypatch
):
    call = approved(make_run, reviewer)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 300)  # kept between tasks (reviewhub/celery.py)
    support.nothing_prepared()
    with CaptureQueriesContext(connection) as queries:
        loop.advance(call.run_id, only=loop.TOOLS)
    sql = [q["sql"] for q in queries.captured_queries]
    assert "approvals_policystamp" in sql[0]  # the approved call with its run, stamp and decisions
    assert support.prepared_runs("approvals_policystamp") == [1]  # prepared for the connection
    claim = next(i for i, s in enumerate(sql) if "UPDATE approvals_toolcall SET" in s)
    assert "INSERT INTO approvals_auditevent" in sql[claim]  # the claim with its event, one statement
    [runs] = support.prepared_runs("UPDATE approvals_toolcall SET")
    assert runs == 1
    assert AuditEvent.objects.filter(tool_call=call, kind="executing").count() == 1
    assert Refund.objects.count() == 1


def test_a_claim_taken_by_another_worker_records_no_executing_event(make_run, reviewer):
    call = services.runnable_calls(pk=approved(make_run, reviewer).pk).get()
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXECUTING)  # taken meanwhile
    head = AuditHead.objects.get(chain=call.run_id).last_hash
    assert not services.toolcall_execute(call=call, loaded=True)
    assert not AuditEvent.objects.filter(tool_call=call, kind="executing").exists()
    assert AuditHead.objects.get(chain=call.run_id).last_hash == head
    assert Refund.objects.count() == 0


def test_a_claim_on_a_chain_without_a_head_row_still_records_its_event(make_run, reviewer):
    call = approved(make_run, reviewer)
    bare = Run.objects.create(agent=call.run.agent, request=REFUND_REQUEST)  # no event yet, so no head row
    ToolCall.objects.filter(pk=call.pk).update(run=bare)
    call = services.runnable_calls(pk=call.pk).get()
    assert services.toolcall_execute(call=call, loaded=True)
    assert AuditEvent.objects.filter(tool_call=call, kind="executing").count() == 1
    assert Refund.objects.count() == 1


def test_the_tools_task_does_not_run_an_approved_call_of_a_cancelled_run(make_run, reviewer):
    call = approved(make_run, reviewer)
    Run.objects.filter(pk=call.run_id).update(status=Run.Status.CANCELLED)
    loop.advance(call.run_id, only=loop.TOOLS)
    assert Refund.objects.count() == 0
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED


def test_before_the_claim_the_call_and_its_decisions_are_read_once_and_policy_by_its_stamp(make_run, reviewer):
    call = approved(make_run, reviewer)
    policy_snapshot.current()  # a process reads its policy once (tests/approvals/test_policy_snapshot.py)
    with CaptureQueriesContext(connection) as queries:
        loop.advance(call.run_id, only=loop.TOOLS)
    sql = [q["sql"] for q in queries.captured_queries]
    reads = [s for s in sql[: claimed_at(sql)] if s.startswith("SELECT")]
    assert sum('FROM "approvals_toolcall"' in s for s in reads) == 1
    assert sum('"approvals_decision"' in s for s in reads) == 1
    assert not any("approvals_policyrule" in s or "approvals_toolsetting" in s for s in reads)
    assert sum("approvals_policystamp" in s for s in reads) == 1
    assert Refund.objects.count() == 1


def test_recording_an_output_locks_the_run_once_and_reads_back_no_row_it_has(make_run, reviewer):
    call = ToolCall.objects.select_related("run").get(pk=approved(make_run, reviewer).pk)
    with CaptureQueriesContext(connection) as queries:
        record_output(call=call, output="Refunded.")
    sql = [q["sql"] for q in queries.captured_queries]
    assert sum("FOR UPDATE" in s for s in sql) == int(connection.features.has_select_for_update)  # the run's, once
    assert sum(s.startswith("SAVEPOINT") for s in sql) == 1  # one block (a test runs inside a transaction)
    assert not any(s.startswith('SELECT "approvals_message"."id"') for s in sql)  # the step is not read back
    last = call.run.messages.order_by("-seq").first()
    assert (last.role, last.content, last.tool_call_id) == ("tool", "Refunded.", call.call_id)
