"""What runs is what the reviewer sees: in a real browser, against the embedded demo."""

import json

import pytest

from tests.livestack import open_in_pane
from tests.stack import sqlite_rows

pytestmark = pytest.mark.browser

PASSWORD = "review-demo-2026"


@pytest.fixture
def reviewer_page(browser, demo):
    from playwright.sync_api import expect

    page = browser.new_page()
    page.set_default_timeout(15000)
    page.goto(demo["url"] + "/login/")
    page.fill("input[name=username]", "reviewer")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Review queue")
    return page


def test_with_the_edit_form_open_the_a_key_approves_what_the_form_shows(demo, reviewer_page):
    from playwright.sync_api import expect

    card = open_in_pane(reviewer_page, "Refund $35.00 to Lee Wong for order A-1002")
    card.get_by_role("link", name="Edit…").click()
    amount = card.locator("input[name=arg_amount]")
    amount.fill("12.5")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_have_count(0)  # the proposal's button is gone
    amount.press("Escape")
    reviewer_page.keyboard.press("a")
    expect(card.locator(".outcome")).to_contain_text("Edited and approved by reviewer")
    rows = sqlite_rows(demo["db"], "select arguments from approvals_decision where verdict = 'edit'")
    assert [json.loads(arguments)["amount"] for (arguments,) in rows] == [12.5]
    trail = "select payload from approvals_auditevent where kind = 'decided' and payload like '%\"edit\"%'"
    (shown,) = [json.loads(payload)["shown"] for (payload,) in sqlite_rows(demo["db"], trail)]
    assert shown["channel"] == "key" and shown["seconds_from_open"] > 0  # keys.js says how the choice was made


def test_a_call_whose_facts_warn_offers_only_approve_anyway(demo, reviewer_page):
    from playwright.sync_api import expect

    card = open_in_pane(reviewer_page, "Refund $490.00 to Dana Smith for order A-1001")
    expect(card.locator(".facts .warning")).to_contain_text("more than the $49.00 still refundable")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    card.get_by_role("button", name="Approve anyway").click()
    expect(card.locator(".outcome")).to_contain_text("Approved by reviewer")
