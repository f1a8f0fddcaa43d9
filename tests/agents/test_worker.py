"""A real Celery worker on Redis resumes runs; what it executes, it executes once."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from agents import loop
from agents.tasks import advance_run
from approvals import services
from approvals.models import Decision, Run, ToolCall
from shop.models import Order, Refund
from tests.stack import Processes, production_env, redis_available, start_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(require_postgres, model, settings):
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: this test needs a real broker.")
    queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
    processes = Processes(
        production_env(connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, model.url, queue)
    )
    start_worker(processes, queue, loglevel="info")  # its log says when each task has succeeded
    settings.TASKS_IN_PROCESS = False
    settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
    yield processes
    processes.stop()


def worker_log(worker: Processes) -> str:
    return Path(worker.procs[0].log_path).read_text()


def pending_refund(run):
    return run.tool_calls.get(tool_name="issue_refund", status=ToolCall.Status.PENDING)


def held_reply(run) -> ToolCall | None:
    """The support agent's final answer, once it waits as a draft reply to the customer (its checkpoint)."""
    return run.tool_calls.filter(kind=ToolCall.Kind.CHECKPOINT, status=ToolCall.Status.PENDING).first()


def approve_held_reply(run, reviewer, worker) -> None:
    assert wait_for(lambda: held_reply(run) is not None), worker_log(worker)
    call = held_reply(run)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)


def test_a_worker_resumes_the_run_after_an_approval(make_run, reviewer, worker):
    run = make_run("Order A-1001 arrived broken. Please refund $490.")
    assert run.status == Run.Status.WAITING
    call = pending_refund(run)

    services.toolcall_decide(
        call_id=call.pk,
        reviewer=reviewer,
        verdict=Decision.Verdict.EDIT,
        shown_hash=call.arguments_hash,
        arguments={"order_id": "A-1001", "amount": 49, "reason": "Item arrived damaged"},
    )

    approve_held_reply(run, reviewer, worker)
    assert wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED), worker_log(worker)
    assert list(Refund.objects.values_list("amount", flat=True)) == [49]
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXECUTED
    assert "A human reviewer edited this call" in call.output


def test_a_task_delivered_twice_refunds_once(make_run, reviewer, worker, settings):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = pending_refund(run)
    settings.REVIEWHUB_RESUME = "tests.support.record_resume"  # deliver by hand below
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)

    deliveries = [advance_run.delay(run.pk), advance_run.delay(run.pk)]
    approve_held_reply(run, reviewer, worker)
    deliveries += [advance_run.delay(run.pk), advance_run.delay(run.pk)]

    assert wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED), worker_log(worker)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    # Both deliveries have run to their end: nothing still running could add a refund after the count below.
    assert wait_for(lambda: all(f"[{task.id}] succeeded" in worker_log(worker) for task in deliveries), timeout=60), (
        worker_log(worker)
    )
    assert Refund.objects.count() == 1
    assert Refund.objects.get().idempotency_key == ToolCall.objects.get(pk=call.pk).idempotency_key
    assert Run.objects.get(pk=run.pk).step_count == 2


def test_a_call_left_executing_by_a_dead_worker_is_finished_once(make_run, reviewer, db):
    """The worker died after the refund was written but before it recorded the result."""
    run = make_run("Order A-1002 arrived broken. Please refund $35.")
    call = pending_refund(run)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    assert services.toolcall_claim(call=call)
    Refund.objects.create(
        order=Order.objects.get(number="A-1002"), amount=35, reason="x", idempotency_key=call.idempotency_key
    )
    an_hour_ago = timezone.now() - timedelta(hours=1)
    ToolCall.objects.filter(pk=call.pk).update(claimed_at=an_hour_ago, lease_expires_at=an_hour_ago)

    loop.advance(run.pk)  # issue_refund is idempotent: its lapsed claim is taken again, with the same key

    assert Refund.objects.count() == 1
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXECUTED
    # The model reads it as this refund finishing, not as an earlier duplicate.
    assert call.output.startswith("Refunded $35.00 on order A-1002")
    assert "issued once" in call.output and "already issued" not in call.output
    assert Run.objects.get(pk=run.pk).status == Run.Status.WAITING  # its answer: a draft for a person


def test_a_claimed_call_is_not_executed_by_a_second_worker(make_run, reviewer, db):
    run = make_run("Order A-1002 arrived broken. Please refund $35.")
    call = pending_refund(run)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    assert services.toolcall_claim(call=call) is True
    assert services.toolcall_claim(call=call) is False
    assert services.toolcall_execute(call=call) is False
    assert Refund.objects.count() == 0
