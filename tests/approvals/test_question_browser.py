"""A reviewer answers a tool's question in the queue's pane, in a real browser against the embedded demo."""

import pytest

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login, open_in_pane
from tests.stack import wait_for_rows

pytestmark = pytest.mark.browser

WHICH = "I'm dana.smith@example.com, my item arrived broken, please refund it."
PROMPT = "Question: Which of Dana Smith's orders is the request about?"


def test_a_reviewer_answers_which_order_and_the_agent_goes_on_with_it(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/login/", "reviewer", DEMO_PASSWORD)
    page.goto(demo["url"] + "/runs/new/")
    page.locator("select[name=agent]").select_option("support")
    page.locator("textarea[name=request]").fill(WHICH)
    page.get_by_role("button", name="Start run").click()

    page.goto(demo["url"] + "/")
    expect(page.locator("#queue li.qrow", has_text=PROMPT)).to_have_count(1, timeout=20000)
    card = open_in_pane(page, PROMPT)
    expect(card.locator("table.payload")).to_contain_text("Ceramic teapot (1)")
    expect(card.locator("table.payload")).to_contain_text("$23.00")

    card.get_by_role("button", name="Answer").click()  # nothing chosen: the field says so, nothing changes
    expect(card.locator("fieldset.field.invalid")).to_contain_text("This field is required.")
    card.get_by_label("A-1005", exact=False).check()
    card.get_by_role("button", name="Answer").click()
    expect(card.locator(".outcome")).to_contain_text("Answered by reviewer")
    expect(card.locator(".output")).to_contain_text("A-1005")

    refund = "Refund $23.00 to Dana Smith for order A-1005"
    expect(page.locator("#queue li.qrow", has_text=refund)).to_have_count(1, timeout=20000)
    sql = "select status from approvals_toolcall where tool_name = 'issue_refund' and arguments like '%A-1005%'"
    assert wait_for_rows(demo["db"], sql) == [("pending",)]
