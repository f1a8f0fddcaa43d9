"""The resumption's hand-written read (services.approved_in_run) is the ORM's runnable_calls(), row for row and field
for field, on whichever database the suite runs (PostgreSQL here; `DATABASE_URL=sqlite://:memory:` for SQLite)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals import services
from approvals.models import Decision, Run, ToolCall
from practice.models import PracticeCall
from tests import support

REFUND = "Order A-1002 arrived broken. Please refund $35."


def orm_read(run_id: int) -> list[ToolCall]:
    calls = services.runnable_calls(run_id=run_id, run__status__in=Run.ACTIVE, kind__in=services.EXECUTABLE)
    return list(calls.order_by("pk"))


def values(instance) -> list:
    return [getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields]


def assert_same(got: list[ToolCall], expected: list[ToolCall]) -> None:
    assert [call.pk for call in got] == [call.pk for call in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert values(mine) == values(theirs)
        assert mine.policy_stamp == theirs.policy_stamp
        assert values(mine.run) == values(theirs.run)
        assert [values(d) for d in mine.loaded_decisions] == [values(d) for d in theirs.loaded_decisions]
        mine_reviewers = [d.reviewer and values(d.reviewer) for d in mine.loaded_decisions]
        assert mine_reviewers == [d.reviewer and values(d.reviewer) for d in theirs.loaded_decisions]
        assert all(d.tool_call is mine for d in mine.loaded_decisions)


def approved(make_run, reviewer) -> ToolCall:
    run = make_run(REFUND)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    return ToolCall.objects.get(pk=call.pk)


def test_an_approved_call_is_read_as_the_orm_reads_it_in_one_statement(make_run, reviewer, reviewer2):
    call = approved(make_run, reviewer)
    # an earlier round's approval by another reviewer, and one with no reviewer left: all read, in order
    earlier = {"tool_call": call, "round": 0, "final": False}
    Decision.objects.create(**earlier, reviewer=reviewer2, verdict="approve", arguments_hash="x")
    Decision.objects.create(**earlier, reviewer=None, verdict="expire", arguments_hash="")
    with CaptureQueriesContext(connection) as queries:
        got = services.approved_in_run(call.run_id)
    assert len(queries.captured_queries) == 1
    assert got[0].final_decision().reviewer == reviewer
    assert len(got[0].loaded_decisions) == 3
    assert_same(got, orm_read(call.run_id))
    with CaptureQueriesContext(connection) as queries:  # everything the execution reads was read with it
        got[0].run.advancer, got[0].final_decision().reviewer.is_superuser, got[0].round_approvals()
    assert queries.captured_queries == []


def test_two_approved_calls_of_a_run_each_come_with_their_own_decisions(make_run, reviewer, reviewer2):
    first = approved(make_run, reviewer)
    second = ToolCall.objects.get(pk=first.pk)
    second.pk, second.call_id = None, "call_second"
    second.save()
    Decision.objects.create(tool_call=second, reviewer=reviewer2, verdict="approve", arguments_hash="y", round=0)
    got = services.approved_in_run(first.run_id)
    assert [len(call.loaded_decisions) for call in got] == [1, 1]
    assert got[1].loaded_decisions[0].reviewer == reviewer2
    assert_same(got, orm_read(first.run_id))


def test_an_abandoned_claim_is_read_and_what_never_runs_is_left_out(make_run, reviewer):
    call = approved(make_run, reviewer)
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXECUTING, claimed_at=call.created_at)
    got = services.approved_in_run(call.run_id)
    assert_same(got, orm_read(call.run_id))
    assert got[0].status == ToolCall.Status.EXECUTING and got[0].claimed_at == call.created_at

    ToolCall.objects.filter(pk=call.pk).update(kind=ToolCall.Kind.QUESTION)  # settled by its answer, never run
    assert services.approved_in_run(call.run_id) == [] == orm_read(call.run_id)


def test_a_practice_call_and_a_finished_run_are_left_out(make_run, reviewer):
    call = approved(make_run, reviewer)
    PracticeCall.objects.create(
        run=call.run, tool_call=call, source=call, tool_name=call.tool_name, mistake="x", explanation="a test"
    )
    assert services.approved_in_run(call.run_id) == [] == orm_read(call.run_id)

    other = approved(make_run, reviewer)
    Run.objects.filter(pk=other.run_id).update(status=Run.Status.CANCELLED)
    assert services.approved_in_run(other.run_id) == [] == orm_read(other.run_id)


def test_on_a_kept_connection_the_read_is_prepared_once_and_reads_the_same(make_run, reviewer, monkeypatch):
    call = approved(make_run, reviewer)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 300)  # a worker's (reviewhub/celery.py)
    if connection.vendor == "postgresql":
        support.nothing_prepared()
    with CaptureQueriesContext(connection) as queries:
        first, again = services.approved_in_run(call.run_id), services.approved_in_run(call.run_id)
    assert_same(first, orm_read(call.run_id))
    assert_same(again, first)
    assert len(queries) == 2
    if connection.vendor == "postgresql":  # planned once for the connection, then only run
        assert support.prepared_runs("approvals_policystamp") == [2]
