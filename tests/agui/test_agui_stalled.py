"""An AG-UI run whose worker died while sending its input is not stuck, and not sent again by itself: the
sweep fails it with the reason, and Retry sends the same input again. A dry run is refused with the reason."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.services import run_start
from agui.models import Exchange
from agui.services import exchange_claim, exchange_next, run_advance
from agui.sweep import stalled_fail
from approvals import services
from approvals.models import Run

from .aguiagents import REQUEST, declare

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stalled_run(roles, requester):
    declare("refunds-down", "http://127.0.0.1:9/")  # nothing listens there
    run = run_start(agent_name="refunds-down", request=REQUEST, requested_by=requester)
    exchange = exchange_next(run_id=run.pk)
    assert exchange_claim(exchange=exchange)  # a worker took it, then died mid-stream
    Exchange.objects.filter(pk=exchange.pk).update(claimed_at=timezone.now() - timedelta(hours=1))
    return run


def test_a_sending_exchange_whose_worker_died_fails_its_run_with_the_reason_once(stalled_run):
    assert stalled_fail() == 1 and stalled_fail() == 0
    stalled_run.refresh_from_db()
    assert stalled_run.status == Run.Status.FAILED and "the worker sending the input stopped" in stalled_run.last_error


def test_retry_after_the_sweep_sends_the_same_input_again(stalled_run, requester, settings):
    stalled_fail()
    sent = Exchange.objects.get(run=stalled_run).input
    services.run_retry(run=stalled_run, user=requester)
    assert run_advance(run_id=stalled_run.pk) == settings.AGUI_RETRY_SECONDS  # tried again (nobody listens)
    exchange = Exchange.objects.get(run=stalled_run)
    assert exchange.input == sent and exchange.status == Exchange.Status.READY and exchange.attempts == 1


def test_a_dry_run_of_an_ag_ui_agent_is_refused_on_new_run_with_the_reason(roles, client, reviewer):
    declare("refunds-dry", "http://127.0.0.1:9/")
    client.force_login(reviewer)
    response = client.post("/runs/new/", {"agent": "refunds-dry", "request": REQUEST, "dry_run": "on"})
    assert response.status_code == 400 and "it has no dry run" in response.content.decode()
    assert not Run.objects.exists()
