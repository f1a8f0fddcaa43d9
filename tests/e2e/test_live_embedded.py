"""The embedded default, as the README runs it: one `manage.py demo` process on
SQLite with the in-memory channel layer. Agent steps run in worker threads of
that process, and their pushes reach the sockets through the server's loop."""

import re
import urllib.parse
import urllib.request

from shop.demo_data import DEMO_PASSWORD
from tests.livestack import http_login, parse_push, queue_socket
from tests.stack import start_demo


def start_run(base_url: str, cookie: str, text: str) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    page = (
        opener.open(urllib.request.Request(base_url + "/runs/new/", headers={"Cookie": cookie}), timeout=10)
        .read()
        .decode()
    )
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"agent": "support", "request": text, "csrfmiddlewaretoken": token}).encode()
    opener.open(
        urllib.request.Request(base_url + "/runs/new/", data=form, headers={"Cookie": cookie, "Referer": base_url}),
        timeout=10,
    )


def test_the_embedded_demo_pushes_from_its_agent_threads(tmp_path):
    processes, demo = start_demo(tmp_path, runs=False)
    try:
        base_url = demo["url"]
        cookie = http_login(base_url, "reviewer", DEMO_PASSWORD)
        with queue_socket(base_url, cookie) as socket:
            start_run(base_url, cookie, "Order A-1002 arrived broken. Please refund $35.")

            push = parse_push(socket.recv(timeout=15))
            assert push["pending"] is True and push["count"] == 1
            assert "Refund $35.00" in push["html"]
            # The demo's New run acts for its agent account: the one person trying it may decide the call.
            assert push["can_decide"] is True
    finally:
        processes.stop()
