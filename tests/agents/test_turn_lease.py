"""A model turn's claim is a lease its worker renews while it waits for the model: a turn longer than the lease
keeps its claim (nobody takes it over, its reply is recorded), and a worker that stops renewing loses it within
the lease, so a worker killed mid-turn is recovered in seconds (TURN_LEASE_SECONDS, 10 by default)."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from agents import llm, loop
from approvals import services
from approvals.models import Run

pytestmark = pytest.mark.django_db(transaction=True)  # the renewals are written by a thread of their own


def test_a_model_turn_longer_than_its_lease_keeps_its_claim_and_is_recorded(make_run, settings, monkeypatch):
    settings.TURN_LEASE_SECONDS = 1  # renewed every 0.33 s
    run = make_run("Look up order A-1001.", advance=False)
    taken_over, real_complete = [], llm.complete

    def slow_model(*args, **kwargs):
        time.sleep(2.5)  # two and a half leases
        taken_over.append(services.run_begin_turn(run=Run.objects.get(pk=run.pk)))  # another worker tries
        taken_over.append(run.pk in services.stuck_runs())  # and the sweep looks
        return real_complete(*args, **kwargs)

    monkeypatch.setattr(llm, "complete", slow_model)
    loop.advance(run.pk)

    run.refresh_from_db()
    assert taken_over and not any(taken_over)  # each turn (a lookup, then the reply) kept its claim
    assert run.step_count >= 1 and run.messages.filter(role="assistant").exists()


def test_a_turn_whose_worker_stopped_renewing_is_taken_over_after_the_lease(make_run, settings):
    settings.TURN_LEASE_SECONDS = 15
    run = make_run("Look up order A-1001.", advance=False)
    assert services.run_begin_turn(run=run)  # a worker claims the turn, then dies: nothing renews it

    assert not services.run_begin_turn(run=Run.objects.get(pk=run.pk))  # within the lease: still its turn
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(seconds=16))
    assert services.stuck_runs() == {run.pk: "the model turn stopped before it finished"}
    assert services.run_begin_turn(run=Run.objects.get(pk=run.pk))


def test_a_renewal_stops_once_the_turn_is_no_longer_its_workers(make_run):
    run = make_run("Look up order A-1001.", advance=False)
    assert services.run_begin_turn(run=run)
    step = Run.objects.get(pk=run.pk).step_count

    assert services.turn_renew(run_id=run.pk, step=step) is True
    Run.objects.filter(pk=run.pk).update(step_count=step + 1)  # taken over by another worker
    assert services.turn_renew(run_id=run.pk, step=step) is False
