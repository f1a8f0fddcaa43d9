"""Model turns and tool execution go to separate queues: a slow model never delays an approved call."""

import time

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext

from agents import dispatch, loop, tasks
from agents import services as agent_services
from approvals import services
from approvals.models import Run, ToolCall
from shop.models import Refund
from tests.stack import Processes, production_env, redis_available, start_worker

REFUND_35 = "Order A-1002 arrived broken. Please refund $35."


@pytest.fixture
def sent(monkeypatch, settings):
    """What would go to Celery, as (run id, kind, queue)."""
    settings.TASKS_IN_PROCESS = False
    sent = []
    monkeypatch.setattr(
        tasks.advance_run, "apply_async", lambda args, queue: sent.append((*args, queue)), raising=False
    )
    return sent


def approve(call: ToolCall, reviewer) -> None:
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)


@pytest.mark.django_db
def test_an_approved_call_goes_to_the_tools_queue_and_a_model_turn_to_the_turns_queue(
    make_run, reviewer, sent, django_capture_on_commit_callbacks
):
    run = make_run(REFUND_35)
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.enqueue_advance(run.pk)
    approve(run.tool_calls.get(), reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.enqueue_advance(run.pk)
    assert sent == [(run.pk, "turn", django_settings.TURNS_QUEUE), (run.pk, "tools", django_settings.TOOLS_QUEUE)]


@pytest.mark.django_db
def test_an_approval_resumes_on_the_tools_queue_without_asking_the_database_again(make_run, reviewer, sent, settings):
    settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
    call = make_run(REFUND_35).tool_calls.get()
    with TestCase.captureOnCommitCallbacks() as after_commit:
        approve(call, reviewer)
    with CaptureQueriesContext(connection) as queries, TestCase.captureOnCommitCallbacks(execute=True):
        for callback in after_commit:
            callback()
    assert sent == [(call.run_id, "tools", django_settings.TOOLS_QUEUE)]
    assert [q["sql"] for q in queries.captured_queries] == []


@pytest.mark.django_db
def test_the_tools_queue_runs_the_approved_call_and_hands_the_model_turn_over(
    make_run, reviewer, model, sent, django_capture_on_commit_callbacks
):
    run = make_run(REFUND_35)
    approve(run.tool_calls.get(), reviewer)

    with django_capture_on_commit_callbacks(execute=True):
        tasks.advance_run(run.pk, "tools")

    assert Refund.objects.count() == 1
    assert len(model.requests()) == 1  # no model turn on the tools queue
    assert sent == [(run.pk, "turn", django_settings.TURNS_QUEUE)]


@pytest.mark.django_db
def test_the_turns_queue_hands_an_approved_call_over_without_running_it(
    make_run, reviewer, model, sent, django_capture_on_commit_callbacks
):
    run = make_run(REFUND_35)
    approve(run.tool_calls.get(), reviewer)

    with django_capture_on_commit_callbacks(execute=True):
        tasks.advance_run(run.pk, "turn")

    assert Refund.objects.count() == 0
    assert len(model.requests()) == 1
    assert sent == [(run.pk, "tools", django_settings.TOOLS_QUEUE)]
    # Run where it was handed over to, the refund is told to the model, whose answer waits as a draft reply.
    assert loop.advance(run.pk) is None and Run.objects.get(pk=run.pk).status == Run.Status.WAITING
    assert Refund.objects.count() == 1


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def two_workers(require_postgres, model, settings):
    """A turns worker and a tools worker, one process each, on this test process's queues."""
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: this test needs a real broker.")
    queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
    processes = Processes(
        production_env(connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, model.url, queue)
    )
    start_worker(processes, queue, 1, kinds=("turns",))
    start_worker(processes, queue, 1, kinds=("default", "tools"))
    settings.TASKS_IN_PROCESS = False
    settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
    yield processes
    processes.stop()


@pytest.mark.django_db(transaction=True)
def test_an_approval_runs_while_a_slow_model_turn_holds_the_turns_worker(
    make_run, reviewer, requester, model, two_workers
):
    waiting = make_run(REFUND_35)  # its first turn was taken here; now it waits for a person
    model.script({"delay": 45, "content": "Still thinking, slowly."})
    slow = agent_services.run_start(agent_name="support", request="Look up order A-1001.", requested_by=requester)
    assert wait_for(lambda: len(model.requests()) == 2, timeout=60), "the turns worker never called the model"

    approve(waiting.tool_calls.get(), reviewer)

    assert wait_for(Refund.objects.exists, timeout=40), "the approved refund waited behind the slow model turn"
    assert Run.objects.get(pk=slow.pk).thinking  # the slow turn is still at the model
    assert len(model.requests()) == 2
