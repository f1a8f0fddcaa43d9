"""On PostgreSQL, with real concurrent connections: one decision, one execution."""

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client

from agents import loop
from approvals.models import AuditEvent, Decision, Run, ToolCall
from shop.models import Refund
from tests.reviewing import post

pytestmark = pytest.mark.django_db(transaction=True)

ATTEMPTS = 20


def in_threads(count, target):
    barrier = threading.Barrier(count)
    results = [None] * count

    def work(i):
        try:
            barrier.wait()
            results[i] = target(i)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_twenty_concurrent_decisions_give_one_decision_and_one_execution(require_postgres, make_run, django_user_model):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    reviewers = Group.objects.get(name="reviewers")
    users = []
    for i in range(ATTEMPTS):
        user = django_user_model.objects.create_user(f"reviewer{i}")
        user.groups.add(reviewers)
        users.append(user)

    def decide(i):
        client = Client()
        client.force_login(users[i])
        action, data = ("approve", {}) if i % 2 == 0 else ("reject", {"reason": "no"})
        response = post(client, call, action, htmx=True, **data)
        return response.status_code, response.content.decode()

    results = in_threads(ATTEMPTS, decide)

    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * (ATTEMPTS - 1)
    assert all("Already " in body and " by reviewer" in body for status, body in results if status == 409)
    assert Decision.objects.filter(tool_call=call).count() == 1
    assert AuditEvent.objects.filter(tool_call=call, kind="decided").count() == 1

    in_threads(ATTEMPTS, lambda i: loop.advance(run.pk))

    call.refresh_from_db()
    if call.status == ToolCall.Status.EXECUTED:
        assert Refund.objects.count() == 1
    else:
        assert call.status == ToolCall.Status.REJECTED and Refund.objects.count() == 0
    assert AuditEvent.objects.filter(tool_call=call, kind__in=["executed", "failed"]).count() == (
        call.status == "executed"
    )
    assert run.messages.filter(role="tool", tool_call_id=call.call_id).count() == 1
    run.refresh_from_db()
    # One model turn after the step: its answer, held once as a draft reply to the customer.
    assert run.status == Run.Status.WAITING
    assert run.messages.filter(role="assistant").count() == 2
    assert run.tool_calls.filter(kind=ToolCall.Kind.CHECKPOINT, status=ToolCall.Status.PENDING).count() == 1
