"""The agent API's docs page works under the site's Content Security Policy, with nothing from a CDN."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_docs_page_lists_the_operations_with_no_csp_violation_and_nothing_from_elsewhere(live_server, browser):
    page = browser.new_page()
    problems, elsewhere = [], []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("request", lambda r: elsewhere.append(r.url) if not r.url.startswith(live_server.url) else None)

    page.goto(live_server.url + "/api/v1/docs")

    page.get_by_text("/api/v1/calls/{call_id}/claim").first.wait_for()
    assert page.get_by_text("ReviewHub agent API").first.is_visible()
    assert problems == [] and [url for url in elsewhere if not url.startswith("data:")] == []
