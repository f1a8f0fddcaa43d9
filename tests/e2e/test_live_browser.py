"""Live review in a real Chromium, against a real ASGI server and a real Celery
worker on Redis and the test PostgreSQL database. Runs are started here and
advanced by the worker, whose pushes travel through Redis to the server."""

import re

import pytest
from playwright.sync_api import expect

from agents import services as agent_services
from approvals import services
from approvals.models import Decision, Run, ToolCall
from shop.models import Refund
from tests.queueseed import pending_calls
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("replies_go_without_review", "resumed_by_the_worker"),
]

REFUND_35 = "Order A-1002 arrived broken. Please refund $35."
EMAIL_DANA = "Email Dana that her replacement has shipped."
# How long a push may take to show, as a ceiling for a busy machine. It is no latency claim:
# bench/fanout.py measures how fast a push reaches the queues.
PUSHED = 15_000  # ms


def is_live(page):
    expect(page.locator("body")).to_have_attribute("data-live", "live", timeout=10_000)
    return page


def start_run(requester, text) -> Run:
    return agent_services.run_start(agent_name="support", request=text, requested_by=requester)


def wait_for_pending_call(run: Run, tool: str) -> ToolCall:
    call = wait_for(lambda: ToolCall.objects.filter(run=run, tool_name=tool, status=ToolCall.Status.PENDING).first())
    assert call is not None, f"the worker did not propose {tool} (its log is in var/test-logs)"
    return call


def focused_card(page) -> str:
    return page.evaluate("(document.activeElement.closest('article.call') || {}).id || document.activeElement.tagName")


SELECTED = re.compile(r"\bselected\b")


def selected_row(page) -> str:
    return page.evaluate("(document.querySelector('#queue li.qrow.selected') || {}).id || ''")


def test_two_reviewers_see_each_others_decision_live(open_page, reviewer, reviewer2, requester, shop):
    a = is_live(open_page(reviewer))
    b = is_live(open_page(reviewer2))

    refund = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")
    for page in (a, b):  # a row pushed into the list, with no reload
        expect(page.locator(f"#queue #row-{refund.pk}")).to_be_visible(timeout=PUSHED)
    email = wait_for_pending_call(start_run(requester, EMAIL_DANA), "send_email")
    for page in (a, b):
        expect(page.locator(f"#queue #row-{email.pk}")).to_be_visible(timeout=PUSHED)
        expect(page.locator("#toasts")).to_contain_text("New call to review: Refund $35.00")
        expect(page.locator("#queue-count")).to_have_text("2")
        expect(page.locator("#queue-shown")).to_have_text("2")
        expect(page).to_have_title("(2) Review queue · ReviewHub")
    b.keyboard.press("j")  # B has the refund open in the pane
    expect(b.locator(f"#detail #call-{refund.pk}")).to_be_visible()
    b_open = b.context.new_page()  # and on its own page in a second tab
    b_open.goto(f"/calls/{refund.pk}/")
    is_live(b_open)

    a.locator(f"#row-{refund.pk} a.row-link").click()  # A opens it in the pane and decides it there
    expect(a.locator(f"#detail #call-{refund.pk}")).to_be_visible()
    a.keyboard.press("a")

    expect(b.locator(f"#detail #call-{refund.pk} .live-outcome")).to_contain_text("Approved by alice", timeout=PUSHED)
    expect(b.locator(f"#detail #call-{refund.pk} button[data-key=a]")).to_be_disabled()
    expect(b.locator(f"#row-{refund.pk}")).to_have_class(re.compile(r"\bdecided\b"))
    expect(b_open.locator(f"#call-{refund.pk} .live-outcome")).to_contain_text("Approved by alice", timeout=PUSHED)
    expect(b_open.locator(f"#call-{refund.pk} button[data-key=a]")).to_be_disabled()
    expect(b.locator("#toasts")).to_contain_text("Approved by alice")
    for page in (a, b):
        expect(page.locator("#queue-count")).to_have_text("1")
        expect(page).to_have_title("(1) Review queue · ReviewHub")
    expect(a.locator(f"#row-{refund.pk}")).to_have_count(0, timeout=PUSHED)  # A saw the outcome, then it left
    expect(a.locator(f"#detail #call-{email.pk}")).to_be_visible()  # and A's pane went on to the next call (a key)
    assert b.evaluate("window.notReloaded") and a.evaluate("window.notReloaded")

    # B's click raced the push: the server answers that it is already decided.
    b_open.locator(f"#call-{refund.pk} button[data-key=a]").evaluate(
        "button => { button.disabled = false; button.click(); }"
    )
    expect(b_open.locator(f"#call-{refund.pk} .error")).to_contain_text("Already approved by alice")
    assert wait_for(lambda: Run.objects.get(pk=refund.run_id).status == Run.Status.COMPLETED)  # the refund ran
    assert Refund.objects.count() == 1
    assert Decision.objects.filter(tool_call=refund).count() == 1

    # B is typing a reason to reject the email when A approves it: B sees why the field stops.
    b.keyboard.press("j")
    expect(b.locator(f"#detail #call-{email.pk}")).to_be_visible()
    b.keyboard.press("r")
    b.keyboard.type("Wrong addr")
    a.locator(f"#detail #call-{email.pk}").get_by_role("button", name="Approve anyway").click()  # the address warns
    expect(b.locator(f"#detail #call-{email.pk} .live-outcome")).to_contain_text("Approved by alice", timeout=PUSHED)
    expect(b.locator(f"#detail #call-{email.pk} input[name=reason]")).to_be_disabled()


def test_a_page_that_reconnects_shows_what_was_proposed_while_it_was_away(open_page, stack, reviewer, requester, shop):
    page = is_live(open_page(reviewer))

    stack.stop_asgi()
    expect(page.locator("#live-status")).to_have_text("reconnecting…", timeout=5000)
    call = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")  # its push reaches nobody
    stack.start_asgi()

    expect(page.locator(f"#queue #row-{call.pk}")).to_be_visible(timeout=10_000)
    is_live(page)
    expect(page.locator("#queue-count")).to_have_text("1")
    assert page.evaluate("window.notReloaded")


def test_without_websockets_the_queue_falls_back_to_polling(open_page, reviewer, requester, shop):
    page = open_page(reviewer, init_script="delete window.WebSocket;")
    expect(page.locator("#live-status")).to_have_text("polling")

    call = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")

    expect(page.locator(f"#queue #row-{call.pk}")).to_be_visible(timeout=8000)
    expect(page.locator("#queue-count")).to_have_text("1")
    assert page.evaluate("window.notReloaded")


def test_keys_act_through_htmx_on_a_row_and_a_card_whose_swap_has_not_settled(open_page, reviewer, requester, shop):
    page = is_live(open_page(reviewer))
    page.evaluate("htmx.config.defaultSettleDelay = 3000")  # a busy machine, exaggerated: htmx binds at settle
    refund = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")
    expect(page.locator(f"#row-{refund.pk}")).to_be_visible(timeout=PUSHED)

    page.keyboard.press("j")  # the pushed row is not bound yet: its link would open the call's page
    expect(page.locator(f"#detail #call-{refund.pk}")).to_be_visible()
    page.keyboard.press("e")  # nor is the card just swapped into the pane: its Edit link would leave the queue
    expect(page.locator(f"#detail #call-{refund.pk} form.edit [name^=arg_]").first).to_be_visible()
    assert page.evaluate("window.notReloaded") and page.evaluate("location.pathname") == "/"


def late_card_leaves_the_chosen_row_marked(page, *, chosen, in_pane) -> None:
    """k to `chosen` while its card is held on the way; the card in the pane (`in_pane`'s) settling meanwhile, as
    the card of a row the reviewer just left can, must not mark its own row again."""
    held = []
    href = page.get_attribute(f"#row-{chosen.pk} a.row-link", "href")
    page.route(f"**{href}", lambda route: held.append(route))
    page.keyboard.press("k")
    for _ in range(300):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the card's request was not sent"
    page.evaluate("c => htmx.trigger(c, 'htmx:load', {elt: c})", page.query_selector(f"#detail #call-{in_pane.pk}"))
    assert selected_row(page) == f"row-{chosen.pk}"
    held[0].continue_()
    page.unroute(f"**{href}")


def test_a_reviewer_decides_from_the_keyboard(open_page, reviewer, requester, shop):
    page = is_live(open_page(reviewer))
    refund = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")
    expect(page.locator(f"#row-{refund.pk}")).to_be_visible(timeout=PUSHED)
    email = wait_for_pending_call(start_run(requester, EMAIL_DANA), "send_email")
    expect(page.locator(f"#row-{email.pk}")).to_be_visible(timeout=PUSHED)

    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator(f"#detail #call-{email.pk}")).to_be_visible()
    expect(page.locator(f"#row-{email.pk}")).to_have_class(SELECTED)  # its card's load marks it when it settles
    assert selected_row(page) == f"row-{email.pk}"
    late_card_leaves_the_chosen_row_marked(page, chosen=refund, in_pane=email)
    expect(page.locator(f"#detail #call-{refund.pk}")).to_be_visible()
    expect(page.locator(f"#row-{refund.pk}")).to_have_class(SELECTED)
    assert selected_row(page) == f"row-{refund.pk}"

    page.keyboard.press("e")
    expect(page.locator(f"#detail #call-{refund.pk} form.edit [name^=arg_]").first).to_be_focused()
    page.keyboard.press("Escape")
    assert focused_card(page) == f"call-{refund.pk}"

    page.keyboard.press("a")
    expect(page.locator(f"#detail #call-{refund.pk} .outcome")).to_contain_text("Approved by alice")
    expect(page.locator(f"#detail #call-{email.pk}")).to_be_visible()  # the pane goes on to the next call
    expect(page.locator(f"#row-{refund.pk}")).to_have_count(0)

    page.keyboard.press("r")
    expect(page.locator(f"#call-{email.pk} input[name=reason]")).to_be_focused()
    page.keyboard.type("Wrong address")
    page.keyboard.press("Enter")
    expect(page.locator(f"#call-{email.pk} .outcome")).to_contain_text("Rejected by alice")
    assert Decision.objects.get(tool_call=email).reason == "Wrong address"
    expect(page.locator("#queue li.qrow")).to_have_count(0, timeout=5000)

    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()


def test_a_filtered_list_says_a_new_call_came_instead_of_inserting_it(open_page, reviewer, requester, shop):
    page = is_live(open_page(reviewer, "/?tool=send_email"))
    refund = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")
    expect(page.locator("#toasts")).to_contain_text("New call to review: Refund $35.00", timeout=PUSHED)
    expect(page.locator(f"#row-{refund.pk}")).to_have_count(0)  # not a send_email call: not this list's
    expect(page.locator("#queue-new")).to_be_hidden()

    with page.expect_response(lambda response: response.request.headers.get("hx-target") == "queue-main"):
        page.goto("/?tool=issue_refund&sort=deadline")  # the list is read again when its socket opens
    is_live(page)
    # A call proposed before that re-read is in the list it reads (the database is the truth), not announced.
    expect(page.locator("#queue-reread.htmx-request")).to_have_count(0)
    second = wait_for_pending_call(start_run(requester, REFUND_35.replace("A-1002", "A-1001")), "issue_refund")
    expect(page.locator("#queue-new")).to_contain_text("1 new calls — show", timeout=PUSHED)  # sorted: not in place
    page.locator("#queue-new a").click()
    expect(page.locator(f"#row-{second.pk}")).to_be_visible()


def test_a_reviewer_filters_the_list_and_decides_a_call_from_the_pane(open_page, reviewer, requester, shop):
    refunds = pending_calls(3, requester=requester)
    emails = pending_calls(2, requester=requester, tool="send_email", agent="mailer", real=True)
    emails = list(emails.tool_calls.order_by("pk"))
    page = is_live(open_page(reviewer))
    expect(page.locator("#queue li.qrow")).to_have_count(5)

    page.locator("select[name=tool]").select_option("send_email")  # applies at once
    expect(page.locator("#queue li.qrow")).to_have_count(2)
    expect(page.locator("#queue-shown")).to_have_text("2")
    page.locator(f"#row-{emails[0].pk} a.row-link").click()
    pane = page.locator(f"#detail #call-{emails[0].pk}")
    expect(pane).to_contain_text(f"Email {emails[0].arguments['to']}")
    pane.locator("button[data-key=a]").click()

    expect(pane.locator(".outcome")).to_contain_text("Approved by alice")
    expect(page.locator(f"#row-{emails[0].pk}")).to_have_count(0)
    assert ToolCall.objects.get(pk=emails[0].pk).status != ToolCall.Status.PENDING
    assert refunds.tool_calls.filter(status=ToolCall.Status.PENDING).count() == 3


def test_a_reviewer_approves_a_group_of_similar_calls_in_one_batch(open_page, reviewer, requester, shop):
    small = list(pending_calls(3, requester=requester, amount=20, real=True).tool_calls.order_by("pk"))
    large = pending_calls(1, requester=requester, amount=900).tool_calls.get()
    page = is_live(open_page(reviewer))

    page.get_by_role("link", name="3 issue_refund calls under $50 from the support agent").click()
    batch = page.locator("#detail #batch-group")
    expect(batch.locator("input[name=calls]:checked")).to_have_count(3)
    batch.get_by_role("button", name="Approve the checked calls").click()

    expect(page.locator(".flash")).to_contain_text("Approved 3 calls")
    assert not ToolCall.objects.filter(pk__in=[c.pk for c in small], status=ToolCall.Status.PENDING).exists()
    assert [d.arguments_hash for d in Decision.objects.filter(tool_call__in=small).order_by("tool_call")] == [
        call.arguments_hash for call in small
    ]
    assert ToolCall.objects.get(pk=large.pk).status == ToolCall.Status.PENDING
    expect(page.locator(f"#row-{large.pk}")).to_be_visible()


FAKE_NOTIFICATIONS = """
window.shown = []; window.asked = 0;
function FakeNotification(title, options) { window.shown.push({title: title, body: options.body}); }
FakeNotification.prototype.close = function () {};
FakeNotification.permission = "default";
FakeNotification.requestPermission = function () {
  window.asked++; FakeNotification.permission = "granted"; return Promise.resolve("granted");
};
window.Notification = FakeNotification;
Object.defineProperty(document, "visibilityState", {get: function () { return "hidden"; }});
"""


def test_a_reviewer_in_another_tab_gets_a_browser_notification(open_page, reviewer, requester, shop):
    page = is_live(open_page(reviewer, init_script=FAKE_NOTIFICATIONS))
    assert page.evaluate("window.asked") == 0  # never asked on page load
    page.locator("#notify-enable").click()
    expect(page.locator("#notify-enable")).to_be_hidden()
    assert page.evaluate("window.asked") == 1

    wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")

    expect(page.locator("#toasts")).to_contain_text("New call to review: Refund $35.00")
    shown = page.evaluate("window.shown")
    assert [n["title"] for n in shown] == ["New call to review"] and "Refund $35.00" in shown[0]["body"]


def test_the_run_page_follows_its_run(open_page, model, reviewer, requester, shop):
    model.script(
        {
            "delay": 2,
            "content": "I'll refund the missing item.",
            "tool_calls": [
                {"name": "issue_refund", "arguments": {"order_id": "A-1002", "amount": 35, "reason": "Missing item"}}
            ],
        }
    )
    run = start_run(requester, "Refund $35 on A-1002 for the missing item.")
    page = open_page(reviewer, f"/runs/{run.pk}/")

    expect(page.locator("#thinking")).to_have_text("model is thinking…", timeout=5000)
    call = wait_for_pending_call(run, "issue_refund")
    row = page.locator(f"#run-call-{call.pk}")
    expect(row).to_contain_text("Waiting for review")
    expect(page.locator("#thinking")).to_have_count(0)
    expect(page.locator(".transcript")).to_contain_text("I'll refund the missing item.")

    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)

    expect(row).to_contain_text("Executed", timeout=10_000)
    expect(row).to_contain_text("Approved by alice")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=10_000)
    assert page.evaluate("window.notReloaded")
