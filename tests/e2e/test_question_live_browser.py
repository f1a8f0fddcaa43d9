"""A tool's question live, in real Chromium against a real ASGI server and Celery worker (test_live_browser.py's
stack): it appears in every reviewer's queue without a reload, and one reviewer's answer reaches the other's pane."""

import pytest
from playwright.sync_api import expect

from approvals.models import Decision, Run, ToolCall
from tests.waiting import wait_for

from .test_live_browser import PUSHED, is_live, start_run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("resumed_by_the_worker"),
]

WHICH = "I'm dana.smith@example.com, my item arrived broken, please refund it."


def test_a_question_reaches_both_reviewers_live_and_one_answer_settles_it(
    open_page,
    reviewer,
    reviewer2,
    requester,
    shop,
):
    a = is_live(open_page(reviewer))
    b = is_live(open_page(reviewer2))
    run = start_run(requester, WHICH)
    question = wait_for(lambda: ToolCall.objects.filter(run=run, kind="question", status="pending").first())
    assert question is not None, "the worker did not ask (its log is in var/test-logs)"
    for page in (a, b):  # a row pushed into the list, with no reload
        expect(page.locator(f"#queue #row-{question.pk}")).to_contain_text("Question: Which of Dana", timeout=PUSHED)

    b.locator(f"#row-{question.pk} a.row-link").click()  # B opens it and picks an order, but A answers first
    b.locator(f"#detail #call-{question.pk}").get_by_label("A-1001", exact=False).check()
    a.locator(f"#row-{question.pk} a.row-link").click()
    card = a.locator(f"#detail #call-{question.pk}")
    card.get_by_label("A-1005", exact=False).check()
    card.get_by_role("button", name="Answer").click()
    expect(card.locator(".outcome")).to_contain_text("Answered by alice")

    expect(b.locator(f"#detail #call-{question.pk}")).to_contain_text("Answered by alice", timeout=PUSHED)
    assert b.evaluate("window.notReloaded")
    b_card = b.locator(f"#detail #call-{question.pk}")
    expect(b_card.locator("button[data-key=a]")).to_be_disabled()  # B's choice kept the card, its form off
    b_card.locator("button[data-key=a]").evaluate("button => { button.disabled = false; button.click(); }")
    expect(b_card.locator(".error")).to_contain_text("Already answered by alice")  # B's click raced the push
    assert list(Decision.objects.filter(tool_call=question).values_list("arguments", flat=True)) == [
        {"order_id": "A-1005"}
    ]
    refund = wait_for(lambda: ToolCall.objects.filter(run=run, tool_name="issue_refund").first())
    assert refund is not None and refund.arguments["order_id"] == "A-1005"  # the agent went on with the answer
    assert wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.WAITING)  # now for the refund
