"""Helpers for the live tests: log in, open queue sockets on real servers, and read what they push."""

import http.cookiejar
import re
import time
import urllib.parse
import urllib.request
from html.parser import HTMLParser

from django.test import Client
from websockets.sync.client import connect


def session_cookie(user) -> str:
    """A session for this user in the test database, which the servers under test share."""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def http_login(base_url: str, username: str, password: str) -> str:
    """Log in through the login form; returns the Cookie header value."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base_url + "/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(base_url + "/login/", data=form, headers={"Referer": base_url + "/login/"})
    opener.open(request, timeout=10)
    cookies = {cookie.name: cookie.value for cookie in jar}
    assert "sessionid" in cookies, f"could not log in as {username}"
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


def browser_login(page, url: str, username: str, password: str) -> None:
    """Log a Playwright page in through the login form that url shows."""
    page.goto(url)
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def queue_socket(base_url: str, cookie: str):
    """A queue socket as a browser on base_url opens it (same origin, session cookie), never idle-pinged."""
    return connect(
        base_url.replace("http://", "ws://") + "/ws/queue/",
        origin=base_url,
        additional_headers={"Cookie": cookie},
        proxy=None,
        ping_interval=None,
        open_timeout=10,
    )


class _Push(HTMLParser):
    """Reads a queue push: its top-level elements, the call's row data, the count and the toast."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__()
        self.depth, self.toast_depth = 0, None
        self.push = {"oob": [], "id": None, "count": None, "toast": None}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth == 0:
            self.push["oob"].append(attrs.get("hx-swap-oob"))
        if tag == "li" and "qrow" in (attrs.get("class") or "").split() and self.push["id"] is None:
            self.push |= {
                "id": int(attrs["data-call-id"]),
                "pending": attrs["data-pending"] == "1",
                "can_decide": attrs["data-can-decide"] == "1",
                "mine": attrs["data-decided-by-you"] == "1",
            }
        if attrs.get("id") == "queue-count":
            self.push["count"] = int(attrs["data-count"])
        if "toast" in (attrs.get("class") or "").split():
            self.toast_depth, self.push["toast"] = self.depth, ""
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag):
        self.depth -= 1
        if self.depth == self.toast_depth:
            self.toast_depth = None

    def handle_data(self, data):
        if self.toast_depth is not None:
            self.push["toast"] += data


def parse_push(html: str) -> dict:
    """What a queue push says: oob (hx-swap-oob of each top-level element), id, pending, can_decide, mine (decided
    by this reviewer), count, toast (its text, or None) and html."""
    reader = _Push()
    reader.feed(html)
    return reader.push | {"html": html}


def receive_call(socket, call_id: int, timeout: float = 5.0) -> dict:
    """The next push about this call (pushes about other calls are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        push = parse_push(socket.recv(timeout=max(0.01, deadline - time.monotonic())))
        if push["id"] == call_id:
            return push


def open_in_pane(page, text: str):
    """Open the queue's row that says `text` in the pane beside the list; its card there."""
    from playwright.sync_api import expect

    page.locator("#queue a.row-link", has_text=text).click()
    card = page.locator("#detail article.call", has_text=text)
    expect(card).to_be_visible()
    return page.locator("#" + card.get_attribute("id"))
