"""The sweep: whatever a dead worker held is found by its lease and taken further; a run it
cannot move is failed with the reason, never left looking healthy."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agents import loop
from approvals import services
from approvals.models import AuditEvent, Message, Run, ToolCall
from shop.models import Order, Refund

from . import support
from .reviewing import REFUND_40, approve_reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def short_times(settings):
    settings.SWEEP_GRACE_SECONDS = 60
    settings.TURN_LEASE_SECONDS = 300
    settings.EXECUTION_LEASE_SECONDS = 120
    settings.SWEEP_MAX_ATTEMPTS = 5


@pytest.fixture
def sweep(django_capture_on_commit_callbacks):
    """One pass of the sweep, its resumptions run as on a commit."""

    def sweep_once(now=None) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            return services.sweep_apply(now=now)

    return sweep_once


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def approved_refund(make_run, reviewer, text: str = REFUND_40) -> ToolCall:
    run = make_run(text)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    support.resumed.clear()  # the decision's own resumption: lost with the worker that held it
    return call


def a_turn_left_thinking(make_run) -> Run:
    run = make_run("Look up order A-1001.", advance=False)
    assert services.run_begin_turn(run=run)  # and then the worker died
    return run


def sweep_resumptions(run: Run) -> list[dict]:
    events = AuditEvent.objects.filter(run=run, kind="resumed", payload__has_key="sweep").order_by("id")
    return list(events.values_list("payload", flat=True))


def test_an_approved_call_nobody_started_is_resumed_after_the_grace_time(make_run, reviewer, sweep):
    call = approved_refund(make_run, reviewer)

    assert sweep(now=later(30)) == {"resumed": 0, "later": 0, "failed": 0, "released": 0, "unknown": 0}
    assert sweep(now=later(61))["resumed"] == 1

    assert support.resumed == [call.run_id]
    assert sweep_resumptions(call.run) == [{"sweep": "an approved call was not started", "attempt": 1}]
    loop.advance(call.run_id)  # what the resumption does
    assert Refund.objects.count() == 1
    assert approve_reply(call.run, reviewer).status == Run.Status.COMPLETED


def test_an_execution_whose_lease_ran_out_is_finished_once_and_told_as_the_same_refund(
    make_run, reviewer, model, sweep
):
    call = approved_refund(make_run, reviewer, "Order A-1002 arrived broken. Please refund $35.")
    assert services.toolcall_claim(call=call)
    Refund.objects.create(  # the worker wrote the refund, then died before recording it
        order=Order.objects.get(number="A-1002"), amount=35, reason="x", idempotency_key=call.idempotency_key
    )

    assert services.sweep_apply(now=later(5))["released"] == 0  # the lease still holds
    assert sweep(now=later(121))["released"] == 1  # issue_refund is idempotent: released to be claimed again
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED
    assert support.resumed == [call.run_id]
    loop.advance(call.run_id)

    assert Refund.objects.count() == 1
    told = [m["content"] for m in model.requests()[-1]["messages"] if m["role"] == "tool"]
    assert told[-1].startswith("Refunded $35.00 on order A-1002") and "already issued" not in told[-1]
    assert approve_reply(call.run, reviewer).status == Run.Status.COMPLETED


def test_a_model_turn_whose_lease_ran_out_is_taken_again(make_run, sweep, reviewer):
    run = a_turn_left_thinking(make_run)
    loop.advance(run.pk)  # the task delivered again at once finds the turn taken, and does nothing
    assert Run.objects.get(pk=run.pk).thinking

    assert services.stuck_runs(now=later(290)) == {}
    assert sweep(now=later(301))["resumed"] == 1
    assert support.resumed == [run.pk]
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(seconds=301))  # time passes
    loop.advance(run.pk)

    assert approve_reply(run, reviewer).status == Run.Status.COMPLETED


def test_a_run_left_waiting_with_every_call_answered_is_resumed(make_run, reviewer, sweep):
    run = make_run(REFUND_40)
    call = run.tool_calls.get()
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.arguments_hash, reason="No."
    )
    support.resumed.clear()
    Message.objects.filter(run=run).update(created_at=timezone.now() - timedelta(seconds=61))
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(seconds=61))

    assert services.stuck_runs() == {run.pk: "nothing was taking the run further"}
    sweep()
    assert support.resumed == [run.pk]


def test_a_run_waiting_for_a_person_is_left_alone(make_run):
    run = make_run(REFUND_40)
    assert run.status == Run.Status.WAITING
    assert services.stuck_runs(now=later(86400)) == {}


def test_a_run_marked_running_while_its_call_waits_for_a_person_is_put_back_to_waiting(make_run):
    run = make_run(REFUND_40)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, updated_at=timezone.now() - timedelta(seconds=61))
    Message.objects.filter(run=run).update(created_at=timezone.now() - timedelta(seconds=61))
    assert services.stuck_runs() == {run.pk: "nothing was taking the run further"}
    loop.advance(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.WAITING


def test_the_sweep_waits_longer_each_time_and_then_fails_the_run_with_the_reason(make_run, settings, sweep):
    settings.TURN_LEASE_SECONDS = 0
    run = a_turn_left_thinking(make_run)
    assert sweep() == {"resumed": 1, "later": 0, "failed": 0, "released": 0, "unknown": 0}
    assert sweep()["later"] == 1  # the resumption may still be on its way
    assert sweep(now=later(61))["resumed"] == 1
    assert sweep(now=later(61))["later"] == 1  # now twice the grace time
    for _ in range(3):
        assert sweep(now=later(3600))["resumed"] == 1
    assert sweep(now=later(3600))["failed"] == 1

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and not run.thinking
    assert "the model turn stopped before it finished" in run.last_error
    assert "resumed the run 5 times" in run.last_error and "Retry" in run.last_error
    assert AuditEvent.objects.filter(run=run, kind="run_failed").exists()


def test_a_retried_run_gets_fresh_attempts(make_run, requester, settings, sweep):
    settings.TURN_LEASE_SECONDS = 0
    run = a_turn_left_thinking(make_run)
    for _ in range(5):
        sweep(now=later(3600))
    assert sweep(now=later(3600))["failed"] == 1

    services.run_retry(run=Run.objects.get(pk=run.pk), user=requester)
    assert sweep(now=later(3600)) == {"resumed": 1, "later": 0, "failed": 0, "released": 0, "unknown": 0}


def test_a_finished_run_is_never_failed_afterwards(make_run, reviewer):
    run = approve_reply(make_run("Look up order A-1001."), reviewer)
    assert run.status == Run.Status.COMPLETED
    assert services.run_fail(run=run, error="too late") is False
    assert Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED


def test_a_turn_given_to_another_worker_records_nothing_from_the_first(make_run, settings):
    run = a_turn_left_thinking(make_run)
    first_turn = run.step_count
    settings.TURN_LEASE_SECONDS = 0
    assert services.run_begin_turn(run=Run.objects.get(pk=run.pk))  # the sweep's worker takes it over

    transcript = list(run.messages.order_by("seq"))
    late = services.model_reply_record(run=run, turn=first_turn, transcript=transcript, content="late", calls=[])

    assert late is None
    assert not Message.objects.filter(run=run, content="late").exists()


def test_a_turn_of_a_run_cancelled_meanwhile_records_nothing(make_run, requester):
    run = a_turn_left_thinking(make_run)
    services.run_cancel(run=Run.objects.get(pk=run.pk), user=requester)
    transcript = list(run.messages.order_by("seq"))
    late = services.model_reply_record(run=run, turn=run.step_count, transcript=transcript, content="late", calls=[])
    assert late is None
    assert not ToolCall.objects.filter(run=run).exists()


def test_the_run_page_says_a_stuck_run_is_stuck_not_thinking(make_run, admin_client, settings, sweep):
    settings.TURN_LEASE_SECONDS = 0
    run = a_turn_left_thinking(make_run)
    html = admin_client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    assert "No progress for" in html and "the model turn stopped before it finished" in html
    assert "The sweep will take it further" in html
    assert "model is thinking" not in html

    sweep()
    html = admin_client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    assert "The sweep resumed it 1 time(s)" in html


def test_the_run_page_of_a_healthy_turn_says_the_model_is_thinking(make_run, admin_client):
    run = a_turn_left_thinking(make_run)
    html = admin_client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    assert "model is thinking" in html and "No progress" not in html


def test_beat_runs_the_sweep(settings):
    from agents import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["sweep-stuck-runs"]
    assert entry["task"] == tasks.sweep.name == "agents.tasks.sweep"
    assert entry["schedule"] == settings.SWEEP_INTERVAL_SECONDS


def test_the_embedded_default_sweeps_in_its_periodic_thread(monkeypatch, settings):
    from agents import tasks
    from runtime import periodic

    passes = []
    monkeypatch.setattr(tasks.services, "deadlines_apply", lambda: passes.append("deadlines"))
    monkeypatch.setattr(tasks.services, "sweep_apply", lambda: passes.append("sweep"))
    work = {name: settings.PERIODIC_WORK[name] for name in ("expire-overdue-calls", "sweep-stuck-runs")}
    settings.PERIODIC_WORK = work
    sleeps = iter([None, None])
    monkeypatch.setattr(periodic.time, "sleep", lambda seconds: next(sleeps))
    monkeypatch.setattr(periodic.time, "monotonic", iter([0.0, 3600.0]).__next__)
    with pytest.raises(StopIteration):
        periodic.run_forever()
    assert passes == ["deadlines", "sweep"]
