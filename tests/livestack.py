"""Helpers for the live tests: log in, and open queue sockets on real servers."""

import http.cookiejar
import json
import re
import time
import urllib.parse
import urllib.request

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


def receive_call(socket, call_id: int, timeout: float = 5.0) -> dict:
    """The next push about this call (pushes about other calls are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(socket.recv(timeout=max(0.01, deadline - time.monotonic())))
        if message.get("type") == "call" and message.get("id") == call_id:
            return message
