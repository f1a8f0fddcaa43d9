"""What the live pages declare in their templates rather than in live.js and keys.js, in real Chromium against
test_live_browser.py's stack: polling while the socket is down (hx-trigger="every 5s", sent only then), a toast
that leaves by itself (htmx's remove-me extension), and the queue's filters applying as they change (hx-trigger)."""

import re

import pytest
from playwright.sync_api import expect

from tests.queueseed import pending_calls

from .test_live_browser import PUSHED, REFUND_35, is_live, start_run, wait_for_pending_call

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("replies_go_without_review", "resumed_by_the_worker"),
]

# The queue socket opens, then the server side is gone for good: a normal closure, which htmx does not reconnect after.
SOCKET_CLOSES_ONCE_OPEN = """
const RealWebSocket = window.WebSocket;
window.WebSocket = function (url, protocols) {
  const socket = new RealWebSocket(url, protocols);
  socket.addEventListener("open", () => setTimeout(() => socket.close(1000), 300));
  return socket;
};
Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
window.WebSocket.prototype = RealWebSocket.prototype;
"""


def rereads_of_the_list(page) -> list[str]:
    """The list's re-reads from the database (the socket opened, or a poll) that the page sends from now on."""
    sent = []
    page.on("request", lambda request: request.headers.get("hx-target") == "queue-main" and sent.append(request.url))
    return sent


def test_while_the_socket_is_down_the_queue_polls_and_shows_a_new_call(
    open_page,
    reviewer,
    requester,
    shop,
):
    page = open_page(reviewer, init_script=SOCKET_CLOSES_ONCE_OPEN)
    expect(page.locator("#live-status")).to_have_text("polling", timeout=10_000)
    rereads = rereads_of_the_list(page)

    call = wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")  # its push reaches nobody

    expect(page.locator(f"#queue #row-{call.pk}")).to_be_visible(timeout=PUSHED)
    expect(page.locator("#queue-count")).to_have_text("1")
    assert rereads and page.evaluate("window.notReloaded")


def test_a_toast_leaves_by_itself_and_a_live_page_sends_no_poll_meanwhile(
    open_page,
    reviewer,
    requester,
    shop,
):
    page = is_live(open_page(reviewer))
    expect(page.locator("#queue-reread.htmx-request")).to_have_count(0)  # the re-read of the socket's opening is done
    rereads = rereads_of_the_list(page)

    wait_for_pending_call(start_run(requester, REFUND_35), "issue_refund")
    toast = page.locator("#toasts .toast", has_text="New call to review: Refund $35.00")
    expect(toast).to_be_visible(timeout=PUSHED)

    expect(toast).to_have_count(0, timeout=15_000)  # it says remove-me="6s": more than a poll's 5 s
    assert rereads == []  # the socket stayed open: nothing polled
    expect(page.locator("body")).to_have_attribute("data-live", "live")


def test_a_filter_applies_as_it_changes_without_a_reload_and_the_address_keeps_it(
    open_page,
    reviewer,
    requester,
    shop,
):
    pending_calls(3, requester=requester)
    pending_calls(2, requester=requester, tool="send_email", agent="mailer", real=True)
    page = is_live(open_page(reviewer))
    expect(page.locator("#queue li.qrow")).to_have_count(5)
    searched = []
    page.on("request", lambda request: "q=nothing" in request.url and searched.append(request.url))

    page.locator("input[name=q]").fill("nothing matches this")
    page.locator("input[name=q]").blur()  # leaving the search box does not send it
    page.locator("select[name=tool]").select_option("send_email")  # a choice applies at once, with what is typed
    expect(page.locator("#queue li.qrow")).to_have_count(0)
    assert len(searched) == 1
    page.locator("input[name=q]").fill("")
    page.locator("input[name=q]").press("Enter")  # the search box applies when sent
    expect(page.locator("#queue li.qrow")).to_have_count(2)
    expect(page.locator("#queue-shown")).to_have_text("2")

    page.get_by_label("Mine").check()  # so does a checkbox
    expect(page).to_have_url(re.compile(r"\?.*tool=send_email.*&mine=1"))
    expect(page.locator("#queue li.qrow")).to_have_count(2)
    assert page.evaluate("window.notReloaded")
    expect(page.locator("#live-status")).to_have_text("live")  # the socket was left alone, and the page says so

    page.go_back()  # no copy of the queue is kept in the browser (its calls may be decided since): read again
    expect(page).not_to_have_url(re.compile(r"mine=1"))
    expect(page.get_by_label("Mine")).not_to_be_checked()
    expect(page.locator("#queue li.qrow")).to_have_count(2)
    assert not page.evaluate("window.notReloaded")
