"""A worker's kept connection that PostgreSQL ended while it was idle is dropped before the next task, without a
round trip (runtime/connections.py); and a run whose connection is cut under it is taken further on a new one
(agents/loop.py), not failed."""

import pytest
from django.db import connection

from agents import loop
from approvals import services
from approvals.models import Run, ToolCall
from runtime.connections import close_ended_by_server
from tests.stack import end_backend_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_connection_ended_by_its_server_is_closed_before_reuse(require_postgres):
    connection.ensure_connection()
    end_backend_of(connection)

    close_ended_by_server()

    assert connection.connection is None
    assert Run.objects.count() == 0  # the next statement opens a new connection


def test_a_healthy_connection_is_kept(require_postgres, django_assert_num_queries):
    connection.ensure_connection()
    kept = connection.connection

    with django_assert_num_queries(0):
        close_ended_by_server()

    assert connection.connection is kept


def test_a_run_whose_connection_was_cut_runs_its_approved_call_on_a_new_one(require_postgres, make_run, reviewer):
    run = make_run("Order A-1002 arrived broken. Please refund $35.")
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    end_backend_of(connection)  # after the decision, before its worker reads anything

    loop.advance(run.pk, only=loop.TOOLS)

    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    assert Run.objects.get(pk=run.pk).status != Run.Status.FAILED
