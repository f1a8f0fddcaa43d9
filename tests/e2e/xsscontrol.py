"""The XSS test's raw control: every payload served unescaped to the same browser, to prove the instruments
catch what runs."""

import os
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.waiting import wait_for

from .payloads import ATTACKER, PAYLOADS, Payload
from .xssinstruments import HTMX, Signal, Watch, dom_report, pumped

# --- the raw control: every payload, unescaped, in the same browser -------------------------------

CONTROL_HARNESS = """
addEventListener("load", function () {
  // Activate what needs a click (javascript: links, buttons), one at a time, then say it is done.
  var targets = Array.from(document.querySelectorAll("a, area, button, input[type=submit], input[type=image], b"))
    .filter(function (el) { return !el.href || el.protocol === "javascript:"; });
  (function next() {
    var el = targets.shift();
    if (!el) { setTimeout(function () { window.__rhSignal("done", location.pathname); }, 50); return; }
    try { el.click(); } catch (e) {}
    setTimeout(next, 5);
  })();
});
"""


def control_document(payload: Payload) -> str:
    """The payload unescaped in the places ReviewHub puts text: a title, text, SVG text, a text area, attributes
    (quoted both ways and unquoted), a link. The control's own scripts (htmx, when the payload uses it) come
    first, in the head."""
    p = payload.text
    htmx = '<script src="/htmx.js"></script>' if "hx-" in p.lower() else ""
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><script src="/harness.js"></script>{htmx}'
        f"<title>{p}</title></head><body><div>{p}</div><svg><text>{p}</text></svg><textarea>{p}</textarea>"
        f'<p><input value="{p}"><input value=\'{p}\'><input value={p}></p><p><a href="{p}">l</a></p>'
        "</body></html>"
    )


PAYLOAD_DOCUMENT = re.compile(r"/p/(\d+)$")


class RawControl(ThreadingHTTPServer):
    """Serves the corpus raw, unescaped, on a port of its own: a batch of payloads per page, a frame each."""

    daemon_threads = True

    def __init__(self, payloads: list[Payload], policy: str = ""):
        self.by_number = {p.n: p for p in payloads}
        self.policy = policy  # a Content-Security-Policy to serve the payloads with, or none
        super().__init__(("127.0.0.1", 0), _ControlHandler)
        self.origin = f"http://127.0.0.1:{self.server_port}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _ControlHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        server: RawControl = self.server
        path, _, query = self.path.partition("?")
        headers = {"Cache-Control": "max-age=600"}
        if path == "/harness.js":
            self._send(CONTROL_HARNESS.encode(), "text/javascript", headers)
        elif path == "/htmx.js":
            self._send(HTMX.read_bytes(), "text/javascript", headers)
        elif path.startswith("/batch/"):
            frames = "".join(f'<iframe src="/p/{n}"></iframe>' for n in path.removeprefix("/batch/").split(","))
            self._send(f"<!doctype html><title>control</title>{frames}".encode(), "text/html")
        elif (match := PAYLOAD_DOCUMENT.search(path)) and not query:
            policy = {"Content-Security-Policy": server.policy} if server.policy else {}
            document = control_document(server.by_number[int(match.group(1))])
            self._send(document.encode(), "text/html", policy)
        else:  # a broken image, a form sent to itself: nothing there
            self._send(b"", "text/html", status=404)

    do_POST = do_GET

    def _send(self, body: bytes, content_type: str, headers: dict | None = None, status: int = 200):
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def payload_number(texts: tuple[str, ...]) -> int | None:
    for text in texts:
        if match := PAYLOAD_DOCUMENT.search(urlsplit(text).path):
            return int(match.group(1))
    return None


@dataclass
class ControlResult:
    seen: dict[int, set[str]]  # payload -> kinds of signals it caused
    flagged: dict[int, list[str]]  # payload -> what the DOM check found
    unattributed: list[str]

    def caught(self) -> set[int]:
        return set(self.seen) | set(self.flagged)


def run_control(browser, payloads: list[Payload], policy: str = "", batch: int = 150) -> ControlResult:
    control = RawControl(payloads, policy)
    watch = Watch(control.origin)
    context = watch.context(browser)
    flagged: dict[int, list[str]] = defaultdict(list)
    try:
        for start in range(0, len(payloads), batch):
            numbers = [p.n for p in payloads[start : start + batch]]
            mark = len(watch.signals)
            page = watch.page(context)
            page.goto(f"{control.origin}/batch/{','.join(map(str, numbers))}")

            # Each frame says when it is done; one a payload navigated away says so by the signal it caused.
            wait_for(pumped(page, lambda m=mark, ns=set(numbers): _settled(watch.signals[m:]) >= ns), timeout=30)
            for finding in dom_report(page).findings:
                number = payload_number(finding.documents)
                if number is not None:
                    flagged[number].append(finding.what)
            page.close()
    finally:
        context.close()
        control.shutdown()
        control.server_close()
    seen: dict[int, set[str]] = defaultdict(set)
    unattributed = []
    for signal in watch.signals:
        if signal.kind == "done":
            continue
        number = payload_number(signal.frames) or _number_in(signal.detail)
        if number in control.by_number:
            seen[number].add(signal.kind)
        else:
            unattributed.append(str(signal))
    return ControlResult(dict(seen), dict(flagged), unattributed)


def _settled(signals: list[Signal]) -> set[int | None]:
    return {payload_number(s.frames) or _number_in(s.detail) for s in signals}


def _number_in(text: str) -> int | None:
    match = re.search(rf"{re.escape(ATTACKER)}/(\d+)|\b(\d+)\b", text)
    return int(match.group(1) or match.group(2)) if match else None


def control_sample() -> list[Payload]:
    """The first payload of every vector (every place a script can hide, with actions in turn); set
    REVIEWHUB_XSS_CONTROL=all to serve the whole corpus raw, and under the app's policy (minutes more)."""
    if os.environ.get("REVIEWHUB_XSS_CONTROL") == "all":
        return PAYLOADS
    first = {}
    for payload in PAYLOADS:
        first.setdefault(payload.vector, payload)
    return list(first.values())
