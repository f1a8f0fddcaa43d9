"""The outcome-unknown card's three answers in a real Chromium (htmx posts, field errors), on the live server."""

import pytest
from django.urls import reverse

from approvals.models import Run, ToolCall
from tests.livestack import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


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
