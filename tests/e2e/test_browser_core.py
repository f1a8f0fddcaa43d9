"""A reviewer in a real browser, against the embedded demo that `make run` starts."""

import pytest

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login, open_in_pane
from tests.stack import sqlite_rows

pytestmark = pytest.mark.browser


def test_a_reviewer_edits_a_490_refund_to_49_approves_it_and_the_run_completes(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/", "reviewer", DEMO_PASSWORD)
    expect(page.locator("h1")).to_have_text("Review queue")

    card = open_in_pane(page, "Refund $490.00 to Dana Smith for order A-1001 (order total $49.00)")
    expect(card.locator(".facts")).to_contain_text("$49.00")
    card.get_by_role("link", name="Edit…").click()
    amount = card.locator("input[name=arg_amount]")
    expect(amount).to_have_value("490.0")
    amount.fill("-3")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.locator(".field.invalid")).to_contain_text("Input should be greater than 0")
    amount = card.locator("input[name=arg_amount]")
    amount.fill("49")
    card.get_by_role("button", name="Approve with these arguments").click()
    expect(card.locator(".outcome")).to_contain_text("Edited and approved by reviewer")

    # The model tells what happened; its answer waits as a draft reply to the customer, approved here.
    reply = page.locator("#queue a.row-link", has_text="Reply to the customer").filter(has_text="A-1001")
    expect(reply).to_have_count(1, timeout=20000)
    reply.click()
    card = page.locator("#detail article.call", has_text="Reply to the customer")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Approved by reviewer")

    card.get_by_role("link", name="run").first.click()
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=20000)
    expect(page.locator(".transcript")).to_contain_text("Refunded $49.00 on order A-1001")

    assert [float(a) for (a,) in sqlite_rows(demo["db"], "select amount from shop_refund")] == [49.0]


def test_the_queue_works_without_javascript(demo, page):
    from playwright.sync_api import expect

    page.context.close()
    browser = page.context.browser
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    browser_login(page, demo["url"] + "/login/", "reviewer", DEMO_PASSWORD)
    page.locator("#queue a.row-link", has_text="Send an email to dana.smith@gmail.co").click()  # the call's page
    card = page.locator("article.call", has_text="Send an email to dana.smith@gmail.co")
    card.locator("input[name=reason]").fill("Wrong address: Dana is dana.smith@example.com")
    card.get_by_role("button", name="Reject").click()
    expect(page.locator(".flash")).to_contain_text("Rejected")  # back on the queue
    expect(page.locator("#queue li.qrow", has_text="Send an email to dana.smith@gmail.co")).to_have_count(0)
