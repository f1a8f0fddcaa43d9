"""A reviewer in a real browser decides held model turns, against the embedded demo (`manage.py demo`): its turn
rule holds every turn of a conversation that mentions a chargeback or a lawyer."""

import re

import pytest

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import browser_login
from tests.stack import wait_for_rows

pytestmark = pytest.mark.browser


def start_run(page, base: str, request: str) -> int:
    page.goto(base + "/runs/new/")
    page.select_option("select[name=agent]", "support")
    page.fill("textarea[name=request]", request)
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def held_turn(demo, run_id: int, step: int) -> int:
    sql = (
        f"select id from approvals_toolcall where run_id={run_id} and kind='turn' and status='pending' "
        f"and json_extract(arguments, '$.step')={step}"
    )
    rows = wait_for_rows(demo["db"], sql, timeout=60)
    assert rows, f"turn {step} of run {run_id} was not held"
    return rows[0][0]


def held_reply(demo, run_id: int) -> int:
    """The support agent's final answer, held as its "Reply to the customer" checkpoint."""
    sql = f"select id from approvals_toolcall where run_id={run_id} and kind='checkpoint' and status='pending'"
    rows = wait_for_rows(demo["db"], sql, timeout=60)
    assert rows, f"the reply of run {run_id} was not held"
    return rows[0][0]


def open_pane(page, base: str, call_id: int):
    """Open a queue row's card in the pane beside the list, claimed by this reviewer."""
    from playwright.sync_api import expect

    page.goto(base + "/")
    page.locator(f"#row-{call_id} a.row-link").click()
    card = page.locator(f"#detail #call-{call_id}")
    expect(card).to_be_visible()
    expect(card.locator(".claim")).to_contain_text("You are reviewing this")
    return card


def open_turn(page, base: str, call_id: int):
    """The queue's row says "Model turn"; clicking it opens the card in the pane beside the list."""
    from playwright.sync_api import expect

    card = open_pane(page, base, call_id)
    expect(page.locator(f"#row-{call_id} .kind")).to_have_text("Model turn")
    return card


def test_a_reviewer_continues_a_turn_then_writes_the_reply_themselves(demo, page):
    from playwright.sync_api import expect

    base = demo["url"]
    browser_login(page, base + "/login/", "reviewer", DEMO_PASSWORD)
    run_id = start_run(page, base, "The customer of order A-1005 threatens a chargeback. Check the order.")

    card = open_turn(page, base, held_turn(demo, run_id, 1))
    expect(card.locator(".request")).to_contain_text("threatens a chargeback")
    expect(card.locator(".transcript.recent")).to_contain_text("threatens a chargeback")
    card.get_by_role("button", name="Continue", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Continued by reviewer")

    card = open_turn(page, base, held_turn(demo, run_id, 2))  # the lookup ran; the next turn is held too
    expect(card.locator(".transcript.recent")).to_contain_text("get_order_status")
    card.get_by_role("button", name="Send this reply").click()
    expect(card.locator(".field.invalid")).to_contain_text("Write the reply")
    card.locator("textarea[name=reply]").fill("We are sorry: order A-1005 is on its way and a person will call you.")
    card.get_by_role("button", name="Send this reply").click()
    expect(card.locator(".outcome")).to_contain_text("Replied by the reviewer by reviewer")

    page.goto(f"{base}/runs/{run_id}/")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=30000)
    last = page.locator(".transcript li.msg").last
    expect(last).to_contain_text("written by reviewer, reviewer")
    expect(last).to_contain_text("order A-1005 is on its way")


def test_a_reviewers_note_is_what_the_model_answers_next(demo, page):
    from playwright.sync_api import expect

    base = demo["url"]
    browser_login(page, base + "/login/", "reviewer", DEMO_PASSWORD)
    page.goto(base + "/")  # the queue is open while the run starts in another tab
    other = page.context.browser.new_context().new_page()
    browser_login(other, base + "/login/", "reviewer", DEMO_PASSWORD)
    run_id = start_run(other, base, "A lawyer wrote to us about order A-1003. Check the order.")
    other.context.close()
    call_id = held_turn(demo, run_id, 1)
    expect(page.locator(f"#queue #row-{call_id} .kind")).to_have_text("Model turn", timeout=30000)  # pushed live

    card = open_turn(page, base, call_id)
    card.locator("textarea[name=note]").fill("Look up order A-1002 instead.")
    card.get_by_role("button", name="Add note and continue").click()
    expect(card.locator(".outcome")).to_contain_text("Continued with a note by reviewer")

    card = open_turn(page, base, held_turn(demo, run_id, 2))
    expect(card.locator(".transcript.recent .by-reviewer")).to_contain_text("Look up order A-1002 instead.")
    card.get_by_role("button", name="Continue", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Continued by reviewer")

    card = open_pane(page, base, held_reply(demo, run_id))  # the answer it wrote waits as a draft to the customer
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".outcome")).to_contain_text("Approved by reviewer")

    page.goto(f"{base}/runs/{run_id}/")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=30000)
    transcript = page.locator(".transcript")
    expect(transcript.locator(".by-reviewer")).to_contain_text("written by reviewer, reviewer")
    expect(transcript).to_contain_text('get_order_status({"order_id": "A-1002"})')
