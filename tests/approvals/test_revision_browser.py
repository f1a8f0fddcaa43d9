"""A round-2 card in a real Chromium: the badge in the queue, the previous round, the reason and the diff; and in
the embedded demo, end to end: a refund sent back with guidance comes back live as round 2."""

import pytest
from django.urls import reverse

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login, open_in_pane
from tests.reviewing import decide, propose

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BODY = "Dear Dana,\nwe are sorry that your teapot arrived broken. We refunded the full $49.00 today.\nBest, Shop"
EMAIL = {"to": "dana.smith@example.com", "subject": "Your refund", "body": BODY, "order_id": "A-1001"}


def test_a_reviewer_sees_a_round_2_draft_with_the_reason_and_what_changed(
    live_server, run, reviewer, reviewer2, browser
):
    from playwright.sync_api import expect

    first = propose(run, "send_email", EMAIL, call_id="c1")
    decide(first, reviewer, "reject", reason="We refunded the shipping only", guidance="Say $7.50, not $49.00")
    revised = BODY.replace("the full $49.00", "the shipping, $7.50,")
    second = propose(run, "send_email", EMAIL | {"body": revised}, call_id="c2")
    page = browser.new_page()
    page.set_default_timeout(15000)
    problems = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)

    browser_login(page, live_server.url + reverse("login"), reviewer2.username, "pw-" + reviewer2.username)
    row = page.locator(f"#row-{second.pk}")
    expect(row.locator(".round-badge")).to_have_text("round 2")
    expect(page.locator(f"#row-{first.pk}")).to_have_count(0)  # decided: not in the queue

    card = open_in_pane(page, "Send an email to dana.smith@example.com")
    revision = card.locator("section.revision")
    expect(card.locator("header .round-badge")).to_have_text("round 2")
    expect(revision.locator("h3")).to_contain_text("Round 2")
    expect(revision.locator(".sent-back-by")).to_contain_text("Sent back with guidance by alice")
    expect(revision.locator(".reason")).to_have_text("We refunded the shipping only")
    expect(revision.locator(".guidance")).to_contain_text("Say $7.50, not $49.00")
    expect(revision.locator(".worddiff del")).to_have_text("full $49.00")
    expect(revision.locator(".worddiff ins")).to_have_text("shipping, $7.50,")
    assert revision.locator(".worddiff del").evaluate("el => getComputedStyle(el).textDecorationLine") == "line-through"
    expect(revision.locator("dl.previous-args .text")).to_contain_text("We refunded the full $49.00 today.")

    card.locator("input[name=reason]").fill("Wrong subject")
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".outcome").last).to_contain_text("Rejected by bob")
    expect(card.locator("section.revision")).to_be_visible()  # a decided revision still shows its round
    assert problems == []


def test_in_the_demo_a_refund_sent_back_with_guidance_comes_back_live_as_round_2(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/login/", "reviewer", DEMO_PASSWORD)
    card = open_in_pane(page, "Refund $490.00 to Dana Smith for order A-1001")
    card.locator("input[name=reason]").fill("The order total is $49")
    card.locator("textarea[name=guidance]").fill("refund $45 instead")
    card.get_by_role("button", name="Respond").click()
    expect(card.locator(".outcome")).to_be_visible()

    row = page.locator("#queue li.qrow", has_text="Refund $45.00 to Dana Smith")  # pushed live when the agent acts
    expect(row.locator(".round-badge")).to_have_text("round 2", timeout=30000)
    revision = open_in_pane(page, "Refund $45.00 to Dana Smith").locator("section.revision")
    expect(revision.locator(".sent-back-by")).to_contain_text("Sent back with guidance by reviewer")
    expect(revision.locator(".reason")).to_have_text("The order total is $49")
    expect(revision.locator("table.round-changes td.before")).to_have_text("490.0")
    expect(revision.locator("table.round-changes td.after")).to_have_text("45.0")
