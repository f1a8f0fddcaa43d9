"""An auditor's pages in a real Chromium, under the real Content Security Policy."""

import pytest
from django.urls import reverse

from tests.livestack import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_insight_charts_and_a_call_chain_render_with_no_csp_violation(live_server, approved_refund, auditor, browser):
    call = approved_refund
    page = browser.new_page()
    problems = []
    page.on(
        "console", lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None
    )
    browser_login(page, live_server.url + reverse("login"), auditor.username, "pw-" + auditor.username)

    page.goto(live_server.url + reverse("approvals:insight"))
    bar = page.locator("svg.chart rect.o-approve").first
    assert bar.is_visible()
    assert bar.evaluate("el => getComputedStyle(el).fill") == "rgb(6, 118, 71)"  # coloured by app.css, not inline
    page.select_option("select[name=tool]", "issue_refund")
    page.click(".window-form button[type=submit]")
    page.wait_for_url("**tool=issue_refund**")
    assert (
        page.locator("#outcomes-issue_refund").is_visible() and page.locator("#outcomes-get_order_status").count() == 0
    )

    page.goto(live_server.url + reverse("admin:approvals_toolcall_change", args=[call.pk]))
    assert page.get_by_text("What ran is what was approved").is_visible()
    assert page.locator("ol.rh-steps > li").count() == 4
    assert problems == []
