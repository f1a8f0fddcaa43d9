"""The high-impact gate in a real Chromium, on the live server: Approve stays disabled until the card has been
shown for its time (a countdown says how long), the key `a` obeys it, a wrong typed amount is refused by the
server, and the right one approves. The decision's trail says the card's facts were in view (card.js)."""

import pytest
from django.urls import reverse

from approvals.models import AuditEvent, Decision, ToolCall
from tests.livestack import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HIGH_IMPACT_SECONDS = 3  # the card's time, waited out in real time here (the gated fixture reads it)


def open_card(live_server, browser, reviewer, call):
    page = browser.new_page()
    browser_login(page, live_server.url + reverse("login"), reviewer.username, "pw-" + reviewer.username)
    page.goto(live_server.url + reverse("approvals:call", args=[call.pk]))
    return page, page.locator(f"#call-{call.pk}")


def test_approve_waits_for_its_time_and_the_key_a_obeys_it(live_server, browser, reviewer, gated):
    from playwright.sync_api import expect

    page, card = open_card(live_server, browser, reviewer, gated)
    approve = card.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_disabled()
    expect(card.locator(".countdown")).to_contain_text("enabled in")
    card.locator("input[name=confirm]").fill("35")
    card.focus()
    page.keyboard.press("a")  # too soon: nothing is sent
    page.wait_for_timeout(300)
    assert not Decision.objects.filter(tool_call=gated).exists()

    expect(approve).to_be_enabled(timeout=10_000)
    card.focus()
    page.keyboard.press("a")
    expect(card.locator(".outcome")).to_contain_text("Approved by")
    assert Decision.objects.get(tool_call=gated).verdict == Decision.Verdict.APPROVE
    decided = AuditEvent.objects.get(tool_call=gated, kind=AuditEvent.Kind.DECIDED)
    assert decided.payload["shown"]["facts_in_view"] is True  # card.js saw the facts on screen


def test_a_wrong_typed_amount_is_refused_by_the_server_then_the_right_one_approves(
    live_server, browser, reviewer, gated
):
    from playwright.sync_api import expect

    page, card = open_card(live_server, browser, reviewer, gated)
    approve = card.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_enabled(timeout=10_000)
    card.locator("input[name=confirm]").fill("350")
    approve.click()
    expect(card.locator(".error")).to_contain_text("Type the amount exactly as the call names it: 35.00.")
    assert ToolCall.objects.get(pk=gated.pk).status == ToolCall.Status.PENDING

    approve = card.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_enabled(timeout=10_000)  # the card shown again counts again
    card.locator("input[name=confirm]").fill("35.00")
    approve.click()
    expect(card.locator(".outcome")).to_contain_text("Approved by")
