"""One person can try the demo: there, New run starts runs on behalf of the demo's agent account, so the
person who started a run may decide its calls. Anywhere else the requester is the logged-in user, who may not."""

import html

import pytest
from django.urls import reverse

from agents import loop
from approvals import access, services
from approvals.models import Run, ToolCall
from shop import demo_data

pytestmark = pytest.mark.django_db

REFUND = "Order A-1001 arrived broken. Please refund $45."


@pytest.fixture
def demo_accounts(settings, shop, model):
    """The embedded demo's settings and accounts (manage.py demo sets REVIEWHUB_DEMO_RUNS_AS)."""
    settings.REVIEWHUB_DEMO_RUNS_AS = "ops-agent"
    return demo_data.seed_users()


def start_and_advance(client) -> Run:
    response = client.post(reverse("agents:new_run"), {"agent": "support", "request": REFUND})
    assert response.status_code == 302
    run = Run.objects.get()
    loop.advance(run.pk)
    return run


def test_in_the_demo_new_run_says_on_whose_behalf_runs_start(client, demo_accounts):
    client.force_login(demo_accounts["reviewer"])
    page = client.get(reverse("agents:new_run")).text
    assert 'id="runs-as"' in page and "<strong>ops-agent</strong>" in page


def test_in_the_demo_the_person_who_started_a_run_can_decide_its_calls(client, demo_accounts):
    client.force_login(demo_accounts["reviewer"])
    run = start_and_advance(client)
    assert run.requested_by == demo_accounts["requester"]
    call = ToolCall.objects.get(run=run, status=ToolCall.Status.PENDING)
    assert access.can_decide(demo_accounts["reviewer"], call) == (True, "")
    services.toolcall_decide(
        call_id=call.pk, reviewer=demo_accounts["reviewer"], verdict="approve", shown_hash=call.review_hash
    )
    call.refresh_from_db()
    assert call.status == ToolCall.Status.APPROVED


def test_in_the_demo_a_missing_agent_account_is_a_clear_error(client, demo_accounts, settings):
    settings.REVIEWHUB_DEMO_RUNS_AS = "nobody"
    client.force_login(demo_accounts["reviewer"])
    response = client.post(reverse("agents:new_run"), {"agent": "support", "request": REFUND})
    assert response.status_code == 400
    assert "The demo's agent account “nobody” does not exist." in html.unescape(response.text)
    assert not Run.objects.exists()


def test_elsewhere_the_requester_is_the_logged_in_user_and_cannot_decide_the_calls(client, requester, shop, model):
    client.force_login(requester)
    assert 'id="runs-as"' not in client.get(reverse("agents:new_run")).text
    run = start_and_advance(client)
    assert run.requested_by == requester
    call = ToolCall.objects.get(run=run, status=ToolCall.Status.PENDING)
    assert access.can_decide(requester, call) == (False, "You requested this run, so you cannot decide its calls.")
    with pytest.raises(services.DecisionError):
        services.toolcall_decide(call_id=call.pk, reviewer=requester, verdict="approve", shown_hash=call.review_hash)
