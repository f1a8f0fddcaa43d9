"""Every page a reviewer and an auditor use, at desktop and phone sizes, in a real Chromium: axe-core finds no
serious or critical accessibility violation, and on a phone nothing scrolls sideways and every control is big
enough to hit with a thumb (44 px)."""

from pathlib import Path

import pytest
from django.urls import reverse

from tests.livestack import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = (Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js").read_text()
DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 360, "height": 740}
TOUCH = 44

# axe-core's serious and critical findings, as "rule: selector" lines.
SERIOUS = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .flatMap(v => v.nodes.map(n => v.id + ": " + n.target.join(" ")));
}"""

# Visible controls in the header and the main content shorter than a thumb. A checkbox or radio counts by its
# label (its hit area); a link inside a sentence is exempt, as WCAG's target-size rule exempts it.
TOO_SMALL = """(touch) => {
  const controls = document.querySelectorAll(
    "header a, header button, main a, main button, main input:not([type=hidden]), main select, main textarea");
  const inSentence = el => getComputedStyle(el).display === "inline" && el.tagName === "A"
    && el.parentElement.textContent.trim().length > el.textContent.trim().length + 3;
  return Array.from(controls).filter(el => el.checkVisibility()).map(el => {
    const target = (el.type === "checkbox" || el.type === "radio") && el.closest("label") || el;
    return [el, target.getBoundingClientRect().height];
  }).filter(([el, height]) => height < touch - 0.5 && !inSentence(el))
    .map(([el, height]) => el.outerHTML.slice(0, 90) + " is " + Math.round(height) + " px high");
}"""

WIDER = "() => document.scrollingElement.scrollWidth - innerWidth"


def check(page, url: str, size: dict) -> list[str]:
    page.goto(url)
    page.evaluate(AXE)
    problems = [f"{url}: {found}" for found in page.evaluate(SERIOUS)]
    if (headings := page.locator("h1").count()) != 1:
        problems.append(f"{url}: {headings} level-one headings")
    if size is PHONE:
        problems += [f"{url}: {found}" for found in page.evaluate(TOO_SMALL, TOUCH)]
        if (overflow := page.evaluate(WIDER)) > 0:
            problems.append(f"{url}: scrolls sideways by {overflow} px")
    return problems


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_is_accessible_and_fits_a_phone(live_server, make_run, reviewer, auditor, browser, size):
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = run.tool_calls.get(status="pending")
    base = live_server.url
    problems = []

    anonymous = browser.new_page(viewport=size)
    problems += check(anonymous, base + reverse("login"), size)

    page = browser.new_page(viewport=size)
    browser_login(page, base + reverse("login"), reviewer.username, "pw-" + reviewer.username)
    for name, args in [
        ("approvals:queue", []),
        ("approvals:call", [call.pk]),
        ("approvals:run", [run.pk]),
        ("agents:runs", []),
        ("agents:new_run", []),
        ("ops:notifications", []),
    ]:
        problems += check(page, base + reverse(name, args=args), size)
    problems += check(page, base + reverse("approvals:call", args=[call.pk]) + "?edit=1", size)

    page.goto(base + reverse("approvals:queue"))
    page.locator("#queue a.row-link").first.click()
    if size is PHONE:  # no room for a pane beside the list: the row opens the call's page
        page.wait_for_url(f"**{reverse('approvals:call', args=[call.pk])}")
    else:
        page.locator(f"#detail #call-{call.pk}").wait_for()
        page.evaluate(AXE)
        problems += [f"queue with the pane open: {found}" for found in page.evaluate(SERIOUS)]

    audit = browser.new_page(viewport=size)
    browser_login(audit, base + reverse("login"), auditor.username, "pw-" + auditor.username)
    problems += check(audit, base + reverse("approvals:insight"), size)
    problems += check(audit, base + reverse("approvals:call", args=[call.pk]), size)
    assert not problems, "\n".join(problems)
