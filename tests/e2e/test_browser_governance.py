"""A reviewer's governance tools in a real browser, against the embedded demo:
the claim on opening a call, the dry-run preview, the edit with its changes shown,
and guidance that the agent acts on."""

import pytest

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login, open_in_pane
from tests.stack import wait_for_rows

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def logged_in(demo, page):
    """Every test here starts on the queue, logged in as the demo reviewer."""
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/login/", "reviewer", DEMO_PASSWORD)
    expect(page.locator("h1")).to_have_text("Review queue")


def test_a_reviewer_claims_previews_and_edits_an_email_seeing_the_changes(demo, page):
    from playwright.sync_api import expect

    card = open_in_pane(page, "Send an email to dana.smith@gmail.co")
    expect(card.locator(".claim")).to_contain_text("You are reviewing this")
    card.get_by_role("link", name="Preview (dry run)").click()
    expect(card.locator(".preview")).to_contain_text("[dry run] Would send to dana.smith@gmail.co")

    card.get_by_role("link", name="Edit…").click()
    card.locator("[name=arg_to]").fill("not an address")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.locator(".field.invalid")).to_contain_text("String should match pattern")
    card.locator("[name=arg_to]").fill("dana.smith@example.com")
    card.get_by_role("button", name="Show changes").click()
    expect(card.locator("table.changes")).to_contain_text("dana.smith@example.com")
    expect(card.locator("table.changes td.before")).to_contain_text("dana.smith@gmail.co")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.locator(".outcome")).to_contain_text("Edited and approved by reviewer")
    assert wait_for_rows(demo["db"], 'select "to" from shop_outgoingemail') == [("dana.smith@example.com",)]


def test_a_reviewer_responds_with_guidance_and_the_agent_acts_on_it(demo, page):
    from playwright.sync_api import expect

    card = open_in_pane(page, "Refund $35.00 to Lee Wong for order A-1002")
    card.locator("input[name=reason]").fill("Only the shipping is ours to refund")
    card.locator("textarea[name=guidance]").fill("refund only the shipping, $9.90")
    card.get_by_role("button", name="Respond").click()
    expect(card.locator(".outcome")).to_be_visible()  # the pane shows the outcome
    refunds = wait_for_rows(
        demo["db"], "select o.number, r.amount from shop_refund r join shop_order o on o.id = r.order_id"
    )
    assert [(number, float(amount)) for number, amount in refunds] == [("A-1002", 9.9)]
