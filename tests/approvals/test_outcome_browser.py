"""The outcome-unknown card's three answers in a real Chromium (htmx posts, field errors), on the live server."""

import dataclasses
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from approvals import services
from approvals.models import Run, ToolCall
from approvals.tools import registry
from tests.livestack import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def unknown(make_run, reviewer, monkeypatch) -> ToolCall:
    tool = dataclasses.replace(registry.get("issue_refund"), idempotent=False)
    monkeypatch.setitem(registry._tools, tool.name, tool)
    run = make_run("Order A-1002 arrived broken. Please refund $35.")
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    assert services.toolcall_claim(call=ToolCall.objects.select_related("run").get(pk=call.pk))
    assert services.sweep_apply(now=timezone.now() + timedelta(seconds=60))["unknown"] == 1
    return call


def open_card(live_server, browser, reviewer, call):
    page = browser.new_page()
    browser_login(page, live_server.url + reverse("login"), reviewer.username, "pw-" + reviewer.username)
    page.goto(live_server.url + reverse("approvals:call", args=[call.pk]))
    card = page.locator(f"#call-{call.pk}")
    assert card.get_by_text("Did this happen?").is_visible()
    return card


def test_it_ran_needs_the_output_then_records_it(live_server, browser, reviewer, unknown):
    from playwright.sync_api import expect

    card = open_card(live_server, browser, reviewer, unknown)
    card.get_by_role("button", name="It ran: record this output").click()
    expect(card.locator(".error")).to_contain_text("Write what it did")
    card.locator("textarea[name=output]").fill("Refunded $35.00, seen in the payment dashboard")
    card.get_by_role("button", name="It ran: record this output").click()

    expect(card.locator(".output")).to_contain_text("seen in the payment dashboard")
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.EXECUTED


def test_it_did_not_run_puts_it_back_to_run_once(live_server, browser, reviewer, unknown):
    from playwright.sync_api import expect

    card = open_card(live_server, browser, reviewer, unknown)
    card.get_by_role("button", name="It did not run: run it now, once").click()

    expect(card.get_by_text("Did this happen?")).to_have_count(0)
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.APPROVED


def test_fail_the_run_needs_a_reason_then_fails_it(live_server, browser, reviewer, unknown):
    from playwright.sync_api import expect

    card = open_card(live_server, browser, reviewer, unknown)
    card.get_by_role("button", name="Fail the run").click()
    expect(card.locator(".error")).to_contain_text("Give the reason")
    card.get_by_label("Reason for failing the run").fill("the bank is down")
    card.get_by_role("button", name="Fail the run").click()

    expect(card.get_by_text("Did this happen?")).to_have_count(0)
    assert Run.objects.get(pk=unknown.run_id).status == Run.Status.FAILED
