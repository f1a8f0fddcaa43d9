"""Stored XSS, in a real Chromium against a real ASGI server.

More than a thousand payloads (tests/payloads.py) are stored through the real paths in every field a model or a
customer controls: the shop's customer names, emails and order items (they feed descriptions, facts and tool
outputs), the run's request, the assistant's reasoning, made-up tool names, call ids, raw and parsed arguments,
reviewers' reasons and guidance and edits, notes, emails, a run's error. Then every page that shows them is
loaded as a reviewer, the requester and the auditor, a new call arrives through the WebSocket while the queue is
open, and htmx swaps in an edit form, its changes, a preview and a decision. On every page: no payload ran
(`__xss`, a function every frame can call, was never called; no dialog opened), no request left for another
host, nothing was posted that the test did not post, no Content Security Policy violation was reported, the DOM
holds no element or attribute a payload made (read through the DevTools protocol, shadow roots and frames
included), no hidden character is shown raw, and every payload reads on the page exactly as it was stored.

The instruments are checked too: payloads served raw to the same browser are caught by them, and in the pages
of the test itself a call, a dialog, a violation and a request leaving are all seen.
"""

import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from django.db import connection

from approvals.lib.text import visible
from approvals.models import AuditEvent, Decision, Run, ToolCall

from .livestack import session_cookie
from .payloads import PAYLOADS, Payload
from .stack import Processes, free_port, production_env, start_asgi
from .waiting import wait_for
from .xsscontrol import control_sample, run_control
from .xssinstruments import DomReport, Watch, dom_report, pumped
from .xssstore import Shorts, Stored, _fit, _lines, _one_line, coverage, store_payloads

pytestmark = pytest.mark.browser


# --- the pages, in the browser ------------------------------------------------------------------------

PUSHED = 30_000  # ms: a ceiling for a push or a swap on a busy machine, no latency claim


@pytest.fixture
def server(django_db_setup, model_server_instance):
    """ReviewHub as it runs in production (uvicorn, DEBUG off, its Content Security Policy) on the test database,
    embedded: the in-memory channel layer, runs advanced in threads of the server. Stopped before the test
    database is emptied."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable: the server under test shares the test database.")
    # No Redis: the in-memory channel layer, and runs advance in threads of the server (no Celery queue).
    env = production_env(connection.settings_dict["NAME"], "", model_server_instance.url, "unused")
    processes = Processes(env)
    port = free_port()
    try:
        start_asgi(processes, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        processes.stop()


@dataclass
class PageCheck:
    where: str
    report: DomReport
    missing: list[Payload]  # payloads the page should show and does not, as they were stored
    characters: int


class Tour:
    """Looks at every page it is shown: the DOM, and the payloads it must show as plain text."""

    def __init__(self, watch: Watch):
        self.watch = watch
        self.checks: list[PageCheck] = []

    def visit(self, page, path: str, shown=(), posts=()) -> None:
        self.watch.expected_posts.update(posts)
        page.goto(path)
        self.look(page, path, shown)

    def look(self, page, where: str, shown=()) -> None:
        report = dom_report(page)
        text = page.evaluate("document.body.textContent")
        flat = text.replace("\n", "")
        # As stored, hidden characters written out ("[U+202E]"); line breaks may have become <br>.
        missing = [p for p in shown if visible(p.text).replace("\n", "") not in flat]
        self.checks.append(PageCheck(f"{where} ({urlsplit(page.url).path})", report, missing, len(text)))

    def problems(self) -> list[str]:
        found = []
        for check in self.checks:
            found += [f"{check.where}: {finding}" for finding in check.report.findings[:5]]
            found += [f"{check.where}: hidden character shown raw: {finding}" for finding in check.report.hidden[:5]]
            found += [f"{check.where}: not shown as stored: {p.text!r}" for p in check.missing[:5]]
        return found


def logged_in(watch: Watch, browser, server: str, user):
    context = watch.context(browser, base_url=server)
    context.add_cookies([{"name": "sessionid", "value": session_cookie(user).split("=", 1)[1], "url": server}])
    return context, watch.page(context)


def live_reply(payloads: list[Payload], order: str) -> dict:
    """What the model answers to the run started while the queue is open: payloads everywhere it can put them."""
    shorts = Shorts(payloads)
    return {
        "content": _lines(payloads),
        "tool_calls": [
            {
                "id": shorts.next().text,
                "name": "issue_refund",
                "arguments": {"order_id": order, "amount": 20.5, "reason": _lines(_fit(payloads, 500))},
            },
            {
                "id": shorts.next().text,
                "name": "send_email",
                "arguments": {
                    "to": "someone@example.org",
                    "subject": shorts.next(_one_line).text,
                    "body": _lines(_fit(payloads[::-1], 10000)),
                    "order_id": order,
                },
            },
            {"id": shorts.next().text, "name": shorts.next().text, "arguments": shorts.next().text},
        ],
    }


def shown_in(*texts: str) -> list[Payload]:
    """The payloads these stored texts hold (a page that shows the texts must show each of them as stored)."""
    joined = "\0".join(texts)
    return [p for p in PAYLOADS if p.text in joined]


# --- the tests --------------------------------------------------------------------------------------


def test_the_instruments_catch_every_payload_served_raw(browser):
    sample = control_sample()
    result = run_control(browser, sample)

    missed = [p.text for p in sample if not p.inert and p.n not in result.caught()]
    assert missed == [], "payloads the instruments would not notice"
    ran = [p for p in sample if p.n in result.seen]
    assert len(ran) >= 0.7 * len(sample), "most payloads are seen doing something, not only found in the DOM"
    assert {p.family for p in ran} == {p.family for p in sample}
    kinds = Counter(kind for kinds in result.seen.values() for kind in kinds)
    assert {"hit", "dialog", "request"} <= set(kinds)
    print(
        f"\nraw control: {len(sample)} payloads ({len({p.vector for p in sample})} vectors), "
        f"{len(ran)} seen running or sending, {len(result.caught())} caught, {len(missed)} missed; "
        f"signals per payload kind: {dict(kinds)}"
    )


def test_the_instruments_report_what_the_app_policy_blocks(browser):
    from django.test import Client

    policy = Client().get("/login/")["Content-Security-Policy"]
    # The harness shows each payload in a frame of its own: the app's frame-ancestors 'none' (about who may
    # embed the app) would blank every frame, so it is left out; every other directive is the app's.
    policy = "; ".join(d for d in policy.split("; ") if not d.strip().startswith("frame-ancestors"))
    sample = PAYLOADS if os.environ.get("REVIEWHUB_XSS_CONTROL") == "all" else PAYLOADS[::20]
    result = run_control(browser, sample, policy=policy)

    blocked = [p for p in sample if "csp" in result.seen.get(p.n, ())]
    assert len(blocked) >= 0.5 * len(sample)
    assert not [p.text for p in sample if "hit" in result.seen.get(p.n, ())], "a script ran despite the policy"
    through = Counter(kind for kinds in result.seen.values() for kind in kinds if kind != "csp")
    for payload in sample:
        if result.seen.get(payload.n, set()) - {"csp"}:
            print("through the policy:", sorted(result.seen[payload.n]), repr(payload.text))
    print(
        f"\nraw under the app's policy: {len(sample)} payloads, {len(blocked)} reported as violations; "
        f"what the policy alone does not stop: {dict(through)}"
    )


@pytest.mark.django_db(transaction=True)
def test_a_thousand_stored_payloads_run_nothing_on_any_page(server, browser, model, reviewer, requester, auditor):
    started = time.monotonic()
    assert len(PAYLOADS) >= 1000 and len({p.shape for p in PAYLOADS}) == len(PAYLOADS)
    stored = store_payloads(PAYLOADS, requester, reviewer)
    placed = coverage(PAYLOADS)
    seeded = time.monotonic()

    watch = Watch(server)
    tour = Tour(watch)
    reviewer_context, queue = logged_in(watch, browser, server, reviewer)
    requester_context, requester_page = logged_in(watch, browser, server, requester)
    auditor_context, admin = logged_in(watch, browser, server, auditor)
    try:
        live_run = queue_and_a_live_push(tour, queue, requester_page, model)
        stored.shown[live_run.pk] = shown_in(live_run.request, *live_run.messages.values_list("content", flat=True))
        swaps_on_the_queue(tour, queue, stored)
        browse = watch.page(reviewer_context)
        a_decision_on_a_call_page(tour, browse, stored)
        for run in [*stored.runs, live_run]:
            tour.visit(browse, f"/runs/{run.pk}/", shown=stored.shown[run.pk])
        tour.visit(browse, "/runs/")
        the_auditors_pages(tour, admin, stored, live_run)

        signals = [str(s) for s in watch.signals]
        problems = tour.problems()
        posts = set(watch.posts)

        # The instruments were on in these very pages: a call, a dialog, a violation, a request leaving are all seen.
        watch.clear()
        queue.evaluate("__xss('control')")
        queue.evaluate("alert('control')")
        admin.evaluate("document.body.append(Object.assign(document.createElement('script'), {textContent: '1'}))")
        browse.evaluate("location.href = 'http://attacker.test/control'")
        every_kind = {"hit", "dialog", "csp", "request"}
        controls = wait_for(pumped(browse, lambda: every_kind <= {s.kind for s in watch.signals}))
    finally:
        for context in (reviewer_context, requester_context, auditor_context):
            context.close()
        if watch.signals:  # what happened before a failure, if one stopped the tour
            print("\nsignals:", *[str(s) for s in watch.signals[:20]], sep="\n  ")

    elements = sum(c.report.elements for c in tour.checks)
    characters = sum(c.characters for c in tour.checks)
    print(
        f"\n{len(PAYLOADS)} payloads ({len(Counter(p.family for p in PAYLOADS))} families), stored in {len(placed)} "
        f"fields in {seeded - started:.0f} s; {len(tour.checks)} page states checked "
        f"({elements} elements, {characters} characters of text) in {time.monotonic() - seeded:.0f} s"
    )
    print("payloads per field:", {name: len(numbers) for name, numbers in placed.items()})
    assert signals == [], "a payload ran, sent a request, posted or violated the policy"
    assert problems == [], "\n".join(problems)
    assert posts <= watch.expected_posts
    assert controls, f"the instruments missed a control: {[str(s) for s in watch.signals]}"
    assert all(len(numbers) >= 20 for numbers in placed.values()), {k: len(v) for k, v in placed.items()}
    assert min(sum(p.n in numbers for numbers in placed.values()) for p in PAYLOADS) >= 8


def queue_and_a_live_push(tour: Tour, queue, requester_page, model) -> Run:
    """The queue with every call waiting in it (every payload is there, in reasonings and requests); then a run
    is started while it is open, and its calls arrive through the WebSocket, with no reload."""
    from playwright.sync_api import expect

    queue.goto("/")
    expect(queue.locator("body")).to_have_attribute("data-live", "live", timeout=PUSHED)
    queue.evaluate("window.notReloaded = true")
    waiting = list(ToolCall.objects.filter(status=ToolCall.Status.PENDING).order_by("created_at", "id")[:50])
    expect(queue.locator("#queue li.qrow")).to_have_count(len(waiting))
    tour.look(queue, "queue", shown=shown_in(*[call.current_description for call in waiting]))
    for call in waiting[:3]:  # a card opened in the pane beside the list (htmx); every card is on its run's page
        tour.watch.expected_posts.add(f"/calls/{call.pk}/claim/")  # opening a call says "being reviewed by you"
        queue.locator(f"#row-{call.pk} a.row-link").click()
        expect(queue.locator(f"#detail #call-{call.pk}")).to_be_visible(timeout=PUSHED)
        tour.look(queue, f"call {call.pk} in the pane", shown=shown_in(call.reasoning, call.user_request))

    live_payloads = PAYLOADS[3::17]
    # Typed into the form, one per line (a browser sends line breaks as CR LF: payloads that hold one stay out).
    request_payloads = _fit([p for p in PAYLOADS[5::13] if "\n" not in p.text], 3000)
    model.script(live_reply(live_payloads, order="A-2003"))
    tour.watch.expected_posts.add("/runs/new/")
    requester_page.goto("/runs/new/")
    requester_page.fill("textarea[name=request]", _lines(request_payloads))
    requester_page.get_by_role("button", name="Start run").click()
    requester_page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get(pk=int(requester_page.url.rstrip("/").rpartition("/")[2]))
    calls = wait_for(lambda: list(run.tool_calls.filter(status=ToolCall.Status.PENDING)) or None, timeout=60)
    assert calls, "the server did not take the run's model turn (its log is in var/test-logs)"
    expect(queue.locator("#toasts")).to_contain_text("New call to review", timeout=PUSHED)
    for call in calls:
        expect(queue.locator(f"#queue #row-{call.pk}")).to_be_visible()
    pushed = shown_in(*[text for call in calls for text in (call.current_description, call.tool_name)])
    tour.look(queue, "queue after a push (with its toast)", shown=pushed)
    for call in calls:  # the pushed call's card, opened in the pane
        tour.watch.expected_posts.add(f"/calls/{call.pk}/claim/")
        queue.locator(f"#row-{call.pk} a.row-link").click()
        expect(queue.locator(f"#detail #call-{call.pk}")).to_be_visible(timeout=PUSHED)
        tour.look(queue, f"pushed call {call.pk} in the pane", shown=shown_in(call.reasoning))
    assert queue.evaluate("window.notReloaded") and queue.locator("body").get_attribute("data-live") == "live"
    # The requester's run page re-read its body through htmx when the run changed.
    expect(requester_page.locator(f"#run-call-{calls[0].pk}")).to_be_visible(timeout=PUSHED)
    tour.look(requester_page, "run page after a push", shown=live_payloads + request_payloads)
    return run


def swaps_on_the_queue(tour: Tour, queue, stored: Stored) -> None:
    """htmx swaps on the open queue: an edit form, the changes a reviewer typed into it, a preview."""
    from playwright.sync_api import expect

    email = stored.calls["waiting email"]
    tour.watch.expected_posts.add(f"/calls/{email.pk}/claim/")
    queue.locator(f"#row-{email.pk} a.row-link").click()  # the card in the pane
    card = queue.locator(f"#detail #call-{email.pk}")
    card.locator("a[data-key=e]").click()
    expect(card.locator("form.edit textarea[name=arg_body]")).to_be_visible(timeout=PUSHED)
    tour.look(queue, "edit form (htmx)")
    card.locator("textarea[name=arg_body]").fill(_lines(_fit(PAYLOADS[7::11], 9000)))
    tour.watch.expected_posts.add(f"/calls/{email.pk}/changes/")
    card.get_by_role("button", name="Show changes").click()
    expect(card.locator("table.changes")).to_be_visible(timeout=PUSHED)
    tour.look(queue, "changes (htmx)")

    refund = stored.calls["waiting refund"]
    tour.watch.expected_posts.add(f"/calls/{refund.pk}/claim/")
    queue.locator(f"#row-{refund.pk} a.row-link").click()
    card = queue.locator(f"#detail #call-{refund.pk}")
    card.get_by_role("link", name="Preview (dry run)").click()
    expect(card.locator(f"#preview-body-{refund.pk}")).to_be_visible(timeout=PUSHED)
    tour.look(queue, "preview (htmx)", shown=shown_in(refund.arguments["reason"]))


def a_decision_on_a_call_page(tour: Tour, page, stored: Stored) -> None:
    """A call's page with its edit form; another's, decided there through htmx with a reason and guidance
    full of payloads."""
    from playwright.sync_api import expect

    email = stored.calls["waiting email"]
    claim = f"/calls/{email.pk}/claim/"  # opening a call says "being reviewed by you"
    tour.visit(page, f"/calls/{email.pk}/?edit=1", shown=shown_in(email.reasoning), posts=[claim])
    back = stored.calls["returned refund"]
    tour.visit(page, f"/calls/{back.pk}/", shown=shown_in(back.returned_reason), posts=[f"/calls/{back.pk}/claim/"])
    reason = [p for p in PAYLOADS[11::29] if _one_line(p)]
    guidance = PAYLOADS[13::29]
    page.locator("input[name=reason]").fill("Because " + " ".join(p.text for p in reason))
    page.locator("textarea[name=guidance]").fill("Do this: " + _lines(guidance))
    tour.watch.expected_posts.add(f"/calls/{back.pk}/respond/")
    page.get_by_role("button", name="Respond").click()
    expect(page.locator(f"#call-{back.pk} .outcome")).to_contain_text("Rejected by alice", timeout=PUSHED)
    tour.look(page, "decision (htmx)", shown=reason + guidance)


def the_auditors_pages(tour: Tour, admin, stored: Stored, live_run: Run) -> None:
    """The admin's lists and pages (each call's page with its chain, checked hash by hash), the insight page."""
    last = (ToolCall.objects.count() - 1) // 50 + 1  # newest first: the waiting calls, then the made-up tools
    for number in (1, 2, last):
        tour.visit(admin, f"/admin/approvals/toolcall/?p={number}")
    for call in [*stored.calls.values(), *live_run.tool_calls.all()]:
        call.refresh_from_db()
        shown = shown_in(call.reasoning, call.user_request, call.tool_name)
        tour.visit(admin, f"/admin/approvals/toolcall/{call.pk}/change/", shown=shown)
    for run in (stored.runs[0], stored.runs[-1], live_run):
        tour.visit(admin, f"/admin/approvals/run/{run.pk}/change/", shown=shown_in(run.request, run.last_error))
    decision = Decision.objects.get(tool_call=stored.calls["rejected refund"])
    tour.visit(admin, "/admin/approvals/decision/")
    tour.visit(admin, f"/admin/approvals/decision/{decision.pk}/change/", shown=shown_in(decision.reason))
    step = stored.calls["waiting email"].message
    tour.visit(admin, "/admin/approvals/message/")
    tour.visit(admin, f"/admin/approvals/message/{step.pk}/change/", shown=shown_in(step.content))
    event = AuditEvent.objects.filter(tool_call=stored.calls["waiting email"]).order_by("pk").first()
    tour.visit(admin, "/admin/approvals/auditevent/")
    tour.visit(admin, f"/admin/approvals/auditevent/{event.pk}/change/")
    tour.visit(admin, "/admin/shop/customer/", shown=stored.customers)
    for name in ("order", "ordernote", "outgoingemail"):
        tour.visit(admin, f"/admin/shop/{name}/")
    tour.visit(admin, "/insight/")  # made-up tools have no outcome: it names registered tools only
