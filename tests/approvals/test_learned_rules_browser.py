"""Adding a rule Insight proposes, in a real Chromium under the real Content Security Policy: htmx swaps in
the replay, and the link leads to the rule in the admin, still in shadow mode."""

import pytest
from django.urls import reverse

from approvals.models import PolicyRule
from tests.livestack import browser_login

from .learning import seed_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_proposed_rule_is_added_in_shadow_mode_and_its_replay_shown(
    live_server, shop, reviewer, browser, django_user_model
):
    seed_history(reviewer)
    django_user_model.objects.create_superuser("root", password="pw-root")
    page = browser.new_page()
    problems = []
    page.on(
        "console", lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None
    )
    browser_login(page, live_server.url + reverse("login"), "root", "pw-root")
    page.goto(live_server.url + reverse("approvals:insight"))
    proposal = page.locator("#learned-issue_refund-amount")
    assert "You approved 25 of 25 issue_refund calls of at most $45.00" in proposal.inner_text()
    proposal.get_by_role("button", name="Add as shadow rule").click()
    page.get_by_text("it would have agreed with 25 of 25 past decisions (100%)").wait_for()
    assert page.url.endswith(reverse("approvals:insight"))  # swapped in place, no page load
    rule = PolicyRule.objects.get(shadow=True)
    page.get_by_role("link", name="Open the rule in the admin").click()
    page.wait_for_url(f"**{reverse('admin:approvals_policyrule_change', args=[rule.pk])}")
    assert page.locator("input[name=shadow]").is_checked()
    assert page.get_by_text("agreed 25 of 25 decisions (100%)").is_visible()
    assert problems == []
