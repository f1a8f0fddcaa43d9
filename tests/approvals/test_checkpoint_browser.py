"""A reviewer at the support agent's checkpoint in a real browser: approve, edit and send back a draft reply."""

import re

import pytest

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login
from tests.stack import sqlite_rows, wait_for_rows

pytestmark = pytest.mark.browser

TITLE = "Reply to the customer"


def open_draft(page, order: str):
    """Open the checkpoint row of the run about `order` in the pane (it arrives live); its card there."""
    from playwright.sync_api import expect

    row = page.locator("#queue a.row-link", has_text=TITLE).filter(has_text=order)
    expect(row).to_have_count(1, timeout=30000)
    row.click()
    card = page.locator("#detail article.call", has_text=TITLE)
    expect(card).to_be_visible()
    return page.locator("#" + card.get_attribute("id"))


def reject_refund(page, text: str, reason: str) -> None:
    """Reject a pending refund from its card: the model then answers, and its answer waits as a draft."""
    from playwright.sync_api import expect

    page.locator("#queue a.row-link", has_text=text).click()
    card = page.locator("#detail article.call", has_text=text)
    card.locator("input[name=reason]").fill(reason)
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".outcome")).to_contain_text("Rejected by reviewer")


def emails(demo, order: str, *, wait: bool = False) -> list[str]:
    """The bodies of the replies emailed about this order (waiting for one to arrive, with `wait`)."""
    sql = f"select body from shop_outgoingemail where subject like '%{order}'"
    return [body for (body,) in (wait_for_rows(demo["db"], sql) if wait else sqlite_rows(demo["db"], sql))]


def test_a_reviewer_approves_the_draft_and_the_run_ends_with_it(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/", "reviewer", DEMO_PASSWORD)
    card = open_draft(page, "A-1004")  # the cancel request: a note was added, and the answer waits
    expect(card.locator("h2")).to_have_text(f"Checkpoint: {TITLE}")
    expect(card.locator(".facts")).to_contain_text("@example.com")
    expect(card.locator(".stage-calls")).to_contain_text("add_order_note")
    draft = card.locator("textarea[name=arg_draft]").input_value()
    assert draft.startswith("Here is what happened:")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Approved by reviewer")

    card.get_by_role("link", name="run").first.click()
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=20000)
    expect(page.locator(".transcript")).to_contain_text("Here is what happened:")
    assert emails(demo, "A-1004", wait=True) == [draft]


def test_a_reviewer_edits_the_draft_and_the_edited_text_is_sent(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/", "reviewer", DEMO_PASSWORD)
    reject_refund(page, "Refund $35.00", "Refund only after the parcel is back.")
    card = open_draft(page, "A-1002")
    text = card.locator("textarea[name=arg_draft]")
    text.fill("")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".field.invalid")).to_contain_text("This field is required.")
    text = card.locator("textarea[name=arg_draft]")
    text.fill("Hi Lee, please send the parcel back and we will refund you.")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Edited and approved by reviewer")
    assert emails(demo, "A-1002", wait=True) == ["Hi Lee, please send the parcel back and we will refund you."]


def test_a_reviewer_sends_a_draft_back_and_approves_the_new_one(demo, page):
    from playwright.sync_api import expect

    browser_login(page, demo["url"] + "/", "reviewer", DEMO_PASSWORD)
    reject_refund(page, "Refund $490.00", "The order total is only $49.")
    card = open_draft(page, "A-1001")
    card.locator("textarea[name=guidance]").fill("Offer Dana a refund of the $49 order total instead.")
    card.get_by_role("button", name="Send back").click()
    expect(card.locator(".outcome")).to_contain_text("Sent back by reviewer")
    assert emails(demo, "A-1001") == []

    page.goto(demo["url"] + "/")
    card = open_draft(page, "A-1001")  # the new draft: the model read the guidance and wrote again
    expect(card.locator("textarea[name=arg_draft]")).to_have_value(
        re.compile(r"Offer Dana a refund of the \$49 order total instead\.$")
    )
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Approved by reviewer")
    sent = emails(demo, "A-1001", wait=True)
    assert len(sent) == 1 and sent[0].endswith("Offer Dana a refund of the $49 order total instead.")
