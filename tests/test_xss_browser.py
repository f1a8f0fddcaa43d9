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

import contextlib
import json
import os
import re
import threading
import time
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings
from django.db import connection

from agents import services as agent_services
from approvals import services
from approvals.models import AuditEvent, Decision, Message, Run, ToolCall
from approvals.services import ProposedCall
from approvals.text import is_hidden, visible
from shop.models import Customer, Order

from .livestack import session_cookie
from .payloads import ATTACKER, PAYLOADS, Payload
from .stack import Processes, free_port, production_env, start_asgi
from .waiting import wait_for

pytestmark = pytest.mark.browser

HTMX = django_settings.BASE_DIR / "static" / "vendor" / "htmx-2.0.10.min.js"

# --- the instruments ------------------------------------------------------------------------------

# Runs in every frame before its own scripts: policy violations are reported to the test as they happen.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", function (e) {
  window.__rhSignal("csp", [e.violatedDirective, e.blockedURI, (e.sample || "").slice(0, 80)].join(" | "));
}, true);
"""


@dataclass
class Signal:
    kind: str  # hit, dialog, request, post, csp, popup, error, websocket
    frames: tuple[str, ...]  # the frame it came from, then its parents
    detail: str

    def __str__(self):
        return f"{self.kind} in {self.frames[0][:100]}: {self.detail[:200]}"


def _frames(frame) -> tuple[str, ...]:
    urls = []
    while frame is not None:
        urls.append(frame.url)
        frame = frame.parent_frame
    return tuple(urls)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class Watch:
    """What the pages of its browser contexts do that no stored text should ever make them do.

    Requests to any other origin are aborted and counted; POSTs to the own origin are counted unless the
    test announced them; `__xss` calls, dialogs, popups, policy violations (the event in every frame, and
    Chromium's console message), uncaught script errors and sockets to other hosts are counted.
    """

    def __init__(self, origin: str):
        self.origin = origin
        self.signals: list[Signal] = []
        self.posts: list[str] = []
        self.expected_posts: set[str] = set()
        self._opening = False

    def context(self, browser, **kwargs):
        context = browser.new_context(**kwargs)
        context.expose_binding("__xss", lambda source, *args: self._add("hit", source["frame"], repr(args)))
        context.expose_binding("__rhSignal", lambda source, kind, detail: self._add(kind, source["frame"], detail))
        context.add_init_script(REPORT_VIOLATIONS)
        # Only requests for other origins are intercepted (the pattern is matched in the browser): the own
        # origin's requests go straight to the server, with its caching.
        context.route(re.compile(f"^(?!{re.escape(self.origin)}/)"), self._foreign)
        context.on("request", self._request)
        context.on("page", self._opened)
        return context

    def page(self, context):
        self._opening = True
        try:
            page = context.new_page()
        finally:
            self._opening = False
        page.set_default_timeout(30_000)
        return page

    def _opened(self, page):
        if not self._opening:
            self.signals.append(Signal("popup", (page.url,), "a page opened by itself"))
        page.on("dialog", lambda dialog: self._dialog(page, dialog))
        page.on("pageerror", lambda error: self.signals.append(Signal("error", (page.url,), str(error))))
        page.on("websocket", lambda ws: self._websocket(page, ws))
        page.on("console", lambda message: self._console(page, message))

    def _add(self, kind: str, frame, detail: str) -> None:
        self.signals.append(Signal(kind, _frames(frame), str(detail)))

    def _dialog(self, page, dialog) -> None:
        self.signals.append(Signal("dialog", (page.url,), f"{dialog.type}: {dialog.message}"))
        with contextlib.suppress(Exception):  # its frame may have gone away meanwhile
            dialog.dismiss()

    def _websocket(self, page, ws) -> None:
        if _origin(ws.url.replace("ws", "http", 1)) != self.origin:
            self.signals.append(Signal("websocket", (page.url,), ws.url))

    def _console(self, page, message) -> None:
        if "Content Security Policy" in message.text:
            self.signals.append(Signal("csp", (page.url,), message.text))

    def _foreign(self, route) -> None:
        request = route.request
        if request.url.startswith(("data:", "blob:", "about:")):
            route.fallback()
            return
        self.signals.append(Signal("request", _request_frames(request), f"{request.method} {request.url}"))
        route.abort()

    def _request(self, request) -> None:
        if request.method == "POST" and _origin(request.url) == self.origin:
            path = urlsplit(request.url).path
            self.posts.append(path)
            if path not in self.expected_posts:
                self.signals.append(Signal("post", _request_frames(request), path))

    def clear(self) -> None:
        self.signals.clear()


def pumped(page, predicate):
    """The predicate, asked after Playwright has delivered the browser's events (a plain sleep would not)."""

    def ask():
        page.wait_for_timeout(50)
        return predicate()

    return ask


def _request_frames(request) -> tuple[str, ...]:
    try:
        return _frames(request.frame)
    except Exception:  # a service worker's request has no frame
        return ("",)


# --- what the DOM holds, read through the DevTools protocol ---------------------------------------

APP_HTMX = {
    "hx-get",
    "hx-post",
    "hx-target",
    "hx-swap",
    "hx-trigger",
    "hx-sync",
    "hx-headers",
    "hx-push-url",
    "hx-ext",
    "hx-select-oob",
    "hx-swap-oob",
}
URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "data",
    "xlink:href",
    "background",
    "poster",
    "ping",
    "srcset",
    "codebase",
    "manifest",
    "lowsrc",
    "dynsrc",
    "values",
    "to",
    "from",
    "by",
    "content",
}
FRAMES = {"iframe", "frame", "frameset", "object", "embed", "applet", "portal", "fencedframe", "base"}
SVG_ACTIVE = {"animate", "set", "animatemotion", "animatetransform", "discard", "foreignobject", "use", "image"}
# Styles a script may set are harmless (the admin hides table cells); styles that load or run are not.
STYLE_LOADS = re.compile(r"url|expression|behavior|binding|animation|image|import|\\", re.I)
ATTRIBUTE_NAME = re.compile(r"[a-z_][a-z0-9_.:-]*")
ELEMENT_NAME = re.compile(r"[a-z][a-z0-9-]*")


def _squeezed(value: str) -> str:
    """A URL as a browser reads its scheme: without spaces, controls and invisible characters."""
    return "".join(ch for ch in value if not (ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf"))).lower()


def _dangerous_url(name: str, value: str) -> bool:
    url = _squeezed(value)
    if name == "content":
        return "url=" in url
    return url.startswith(("javascript:", "vbscript:", "data:text", "data:application", "data:image/svg", "//")) or (
        ATTACKER in url
    )


@dataclass
class Finding:
    documents: tuple[str, ...]  # the document it is in, then the documents around it
    what: str

    def __str__(self):
        return f"{self.what} (in {self.documents[0][:100]})"


@dataclass
class DomReport:
    findings: list[Finding] = field(default_factory=list)  # markup a payload made
    hidden: list[Finding] = field(default_factory=list)  # invisible or bidirectional characters shown raw
    elements: int = 0


def dom_report(page) -> DomReport:
    session = page.context.new_cdp_session(page)
    try:
        root = session.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
    finally:
        session.detach()
    report = DomReport()
    _walk(root, report, (), in_head=False, raw_text=False)
    return report


def _walk(node: dict, report: DomReport, documents: tuple[str, ...], in_head: bool, raw_text: bool) -> None:
    kind = node["nodeType"]
    if kind == 9:  # a document: the page's, or a frame's
        documents = (node.get("documentURL") or node.get("baseURL") or "?", *documents)
    elif kind == 1:
        name = (node.get("localName") or node["nodeName"]).lower()
        _check_element(node, name, report, documents, in_head)
        in_head = in_head or name == "head"
        raw_text = raw_text or name in ("textarea", "script", "style")
        report.elements += 1
    elif kind == 3 and not raw_text and any(is_hidden(ch) for ch in node.get("nodeValue", "")):
        report.hidden.append(Finding(documents, f"text {_hidden_sample(node['nodeValue'])}"))
    for root in node.get("shadowRoots", []):
        if root.get("shadowRootType") != "user-agent":  # the browser's own (in an input, a text area) is not read
            report.findings.append(Finding(documents, f"a {root.get('shadowRootType')} shadow root"))
            _walk(root, report, documents, in_head, raw_text)
    for child in node.get("children", []):
        _walk(child, report, documents, in_head, raw_text)
    if "templateContent" in node:
        _walk(node["templateContent"], report, documents, in_head, raw_text)
    if "contentDocument" in node:
        _walk(node["contentDocument"], report, documents, False, False)


def _hidden_sample(text: str) -> str:
    at = next(i for i, ch in enumerate(text) if is_hidden(ch))
    return repr(text[max(0, at - 30) : at + 30])


def _link(attributes: dict) -> str:
    return attributes.get("href") or attributes.get("xlink:href") or ""


def _check_element(node: dict, name: str, report: DomReport, documents: tuple[str, ...], in_head: bool) -> None:
    values = node.get("attributes", [])
    attributes = dict(zip(values[::2], values[1::2]))

    def found(what: str) -> None:
        report.findings.append(Finding(documents, f"<{name}> {what}"))

    if not ELEMENT_NAME.fullmatch(name):
        found("an element with a malformed name")
    for raw_name, value in attributes.items():
        attribute = raw_name.lower()
        if not ATTRIBUTE_NAME.fullmatch(attribute):
            found(f"a malformed attribute name {raw_name!r}")
        elif attribute.startswith(("on", "hx-on", "data-hx-on")):
            found(f"an event handler {raw_name}={value[:60]!r}")
        elif attribute.startswith(("hx-", "data-hx-")) and (
            attribute not in APP_HTMX or "js:" in value or "[" in value or "//" in value
        ):
            found(f"an htmx attribute {raw_name}={value[:60]!r}")
        elif attribute in ("srcdoc", "http-equiv") or (attribute == "style" and STYLE_LOADS.search(value)):
            found(f"{raw_name}={value[:60]!r}")
        elif attribute in URL_ATTRIBUTES and _dangerous_url(attribute, value):
            found(f"a dangerous URL {raw_name}={value[:60]!r}")
        if attribute != "value" and any(is_hidden(ch) for ch in value):
            report.hidden.append(Finding(documents, f"<{name} {raw_name}> {_hidden_sample(value)}"))
    if name in FRAMES:
        found("a frame, an object or a base")
    elif name == "script":
        src = attributes.get("src", "")
        if attributes.get("type") != "application/json" and not (src.startswith("/") and not src.startswith("//")):
            found(f"a script that is not one of ours (src={src[:60]!r})")
    elif name == "style":
        found("a style element")
    elif name == "link" and (not in_head or attributes.get("rel") not in ("stylesheet", "icon")):
        found(f"a link rel={attributes.get('rel')!r}")
    elif name == "meta" and not in_head:
        found("a meta element in the body")
    elif name in SVG_ACTIVE and not (name == "use" and _link(attributes).startswith("#")):  # the admin's icons
        found("an SVG element that runs or loads")


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


# --- storing the payloads where models and customers write ----------------------------------------

RUNS = 8  # runs with calls; run r holds every RUNS-th payload, from the r-th
CALLS = (
    5  # calls of each run's second step: two wait, one comes back to the queue, one is edited and sent, one rejected
)
SHORT = 150  # payloads that fit a name, an address, a tool name, a call id or a subject


def _fit(payloads: list[Payload], limit: int) -> list[Payload]:
    """As many of the payloads as fit in `limit` characters, one per line."""
    taken, size = [], 0
    for payload in payloads:
        if size + len(payload.text) + 1 > limit:
            break
        taken.append(payload)
        size += len(payload.text) + 1
    return taken


def _groups(payloads: list[Payload], limit: int) -> list[list[Payload]]:
    """The payloads in groups that fit `limit` characters joined by spaces."""
    groups: list[list[Payload]] = [[]]
    for payload in payloads:
        if groups[-1] and len(" ".join(p.text for p in [*groups[-1], payload])) > limit:
            groups.append([])
        groups[-1].append(payload)
    return groups


def _lines(payloads: list[Payload]) -> str:
    return "\n".join(p.text for p in payloads)


def _one_line(payload: Payload) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in payload.text)


class Shorts:
    """The short payloads of a chunk, handed out in turn."""

    def __init__(self, payloads: list[Payload]):
        self.payloads = [p for p in payloads if len(p.text) <= SHORT]
        self.at = 0

    def next(self, fits=lambda p: True) -> Payload:
        while True:
            payload = self.payloads[self.at % len(self.payloads)]
            self.at += 1
            if fits(payload):
                return payload

    def several(self, limit: int, first=lambda p: True) -> list[Payload]:
        """Payloads that fit `limit` characters joined by spaces, the first one chosen by `first`."""
        taken = [self.next(first)]
        while len(" ".join(p.text for p in taken)) + 1 + len(self.payloads[self.at % len(self.payloads)].text) <= limit:
            taken.append(self.next())
        return taken


@dataclass
class Stored:
    runs: list[Run] = field(default_factory=list)  # with calls, then the failed one
    shown: dict[int, list[Payload]] = field(default_factory=dict)  # run -> payloads its page shows verbatim
    calls: dict[str, ToolCall] = field(default_factory=dict)  # one of each kind, to open
    customers: list[Payload] = field(default_factory=list)  # whose names are payloads


def store_payloads(payloads: list[Payload], requester, reviewer) -> Stored:
    """Every payload, in every field a model or a customer controls, through the services the agent loop uses."""
    stored = Stored()
    for r in range(RUNS):
        chunk = payloads[r::RUNS]
        shorts = Shorts(chunk)
        orders = []
        for k in range(CALLS):
            i = r * CALLS + k
            name = shorts.several(200, first=lambda p: p.family == "bidi")
            stored.customers += name
            customer = Customer.objects.create(
                name=" ".join(p.text for p in name),
                email=" ".join(p.text for p in shorts.several(240)) + f"@c{i}.test",
                customer_since="2022-01-04",
            )
            orders.append(
                Order.objects.create(
                    number=f"A-{2000 + i}",
                    customer=customer,
                    total="100.00",
                    status=Order.Status.DELIVERED,
                    items=_lines(chunk[k::CALLS]),
                )
            )
        run = agent_services.run_start(agent_name="support", request=_lines(chunk), requested_by=requester)
        stored.runs.append(run)
        stored.shown[run.pk] = chunk

        # A first step that needs nobody: lookups and a note run at once, made-up tools are refused.
        first = [
            ProposedCall(f"status-{r}", "get_order_status", json.dumps({"order_id": orders[0].number})),
            ProposedCall(f"find-{r}", "lookup_customer", json.dumps({"query": orders[1].customer.email})),
            ProposedCall(
                f"note-{r}",
                "add_order_note",
                json.dumps({"order_id": orders[0].number, "text": _lines(_fit(chunk[1::2], 2000))}),
            ),
        ]
        # Every payload of the chunk in a made-up tool's name, its call id and its arguments, a few to a call.
        for names in _groups(chunk, 200):
            text = " ".join(p.text for p in names)
            first.append(ProposedCall(text, text, text))
        bad = {"order_id": shorts.next().text, "amount": shorts.next().text, "reason": shorts.next().text}
        first.append(ProposedCall("bad:" + shorts.next().text, "issue_refund", json.dumps(bad)))
        services.step_record(run=run, content=_lines(chunk[::3]), calls=first)
        for call in run.tool_calls.filter(status=ToolCall.Status.APPROVED):
            services.toolcall_execute(call=call)

        # The second step: refunds and emails for a person, the model's arguments laden with payloads.
        second = []
        for k, order in enumerate(orders):
            if k % 2 == 0:
                arguments = {"order_id": order.number, "amount": 490.0 if k == 0 else 35.0}
                arguments["reason"] = _lines(_fit(chunk[k::2], 500))
                tool = "issue_refund"
            else:
                arguments = {"to": f"customer{r}{k}@example.org", "order_id": order.number}
                arguments["subject"] = shorts.next(_one_line).text
                arguments["body"] = _lines(_fit(chunk, 10000))
                tool = "send_email"
            second.append(ProposedCall(f"{k}:{shorts.next().text}", tool, json.dumps(arguments)))
        services.step_record(run=run, content=_lines(chunk), calls=second)
        pending = list(run.tool_calls.filter(status=ToolCall.Status.PENDING).order_by("pk"))
        waiting_refund, waiting_email, returning, edited, rejected = pending

        # A reviewer rejects one with a reason and guidance...
        services.toolcall_respond(
            call_id=rejected.pk,
            reviewer=reviewer,
            shown_hash=rejected.review_hash,
            reason=_lines(chunk[1::4]),
            guidance=_lines(chunk[3::4]),
        )
        # ...edits an email and it is sent...
        changed = {**edited.arguments, "subject": shorts.next(_one_line).text, "body": _lines(_fit(chunk[::-1], 10000))}
        services.toolcall_decide(
            call_id=edited.pk,
            reviewer=reviewer,
            verdict=Decision.Verdict.EDIT,
            shown_hash=edited.review_hash,
            arguments=changed,
            approve_anyway=True,
        )
        services.toolcall_execute(call=ToolCall.objects.get(pk=edited.pk))
        # ...and approves a refund whose customer then changes their address: it comes back to the queue.
        services.toolcall_decide(
            call_id=returning.pk, reviewer=reviewer, verdict=Decision.Verdict.APPROVE, shown_hash=returning.review_hash
        )
        Customer.objects.filter(orders__number=returning.arguments["order_id"]).update(
            email=" ".join(p.text for p in shorts.several(240)) + f"@moved{r}.test"
        )
        services.toolcall_execute(call=ToolCall.objects.get(pk=returning.pk))
        if r == 0:
            stored.calls |= {
                "waiting refund": waiting_refund,
                "waiting email": waiting_email,
                "returned refund": returning,
                "edited email": edited,
                "rejected refund": rejected,
                "order lookup": run.tool_calls.get(call_id=f"status-{r}"),
                "made-up tool": run.tool_calls.filter(status=ToolCall.Status.INVALID).first(),
            }

    # A run the model failed: its error quotes everything.
    failed = agent_services.run_start(agent_name="support", request=payloads[0].text, requested_by=requester)
    services.run_fail(run=failed, error="The model answered with an error:\n" + _lines(payloads))
    stored.runs.append(failed)
    stored.shown[failed.pk] = payloads
    return stored


def coverage(payloads: list[Payload]) -> dict[str, set[int]]:
    """Field -> the payloads stored in it, read back from the database."""
    from shop.models import OrderNote, OutgoingEmail

    def values(rows):
        for value in rows:
            yield json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value or "")

    calls = ToolCall.objects.all()
    fields = {
        "customer name": Customer.objects.values_list("name", flat=True),
        "customer email": Customer.objects.values_list("email", flat=True),
        "order items": Order.objects.values_list("items", flat=True),
        "run request": Run.objects.values_list("request", flat=True),
        "run error": Run.objects.values_list("last_error", flat=True),
        "assistant's reasoning": Message.objects.filter(role="assistant").values_list("content", flat=True),
        "tool name": calls.values_list("tool_name", flat=True),
        "call id": calls.values_list("call_id", flat=True),
        "raw arguments": calls.values_list("raw_arguments", flat=True),
        "arguments": calls.values_list("arguments", flat=True),
        "edited arguments": calls.filter(approved_arguments__isnull=False).values_list("approved_arguments", flat=True),
        "description": calls.values_list("description", flat=True),
        "facts": calls.values_list("facts", flat=True),
        "tool output": calls.values_list("output", flat=True),
        "back-in-queue reason": calls.values_list("returned_reason", flat=True),
        "decision reason": Decision.objects.values_list("reason", flat=True),
        "decision guidance": Decision.objects.values_list("guidance", flat=True),
        "order note": OrderNote.objects.values_list("text", flat=True),
        "email sent": OutgoingEmail.objects.values_list("body", flat=True),
        "audit trail": AuditEvent.objects.values_list("payload", flat=True),
    }
    result = {}
    for name, rows in fields.items():
        text = "\0".join(values(rows))
        result[name] = {p.n for p in payloads if p.text in text or json.dumps(p.text, ensure_ascii=False)[1:-1] in text}
    return result


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
    waiting = ToolCall.objects.filter(status=ToolCall.Status.PENDING).count()
    expect(queue.locator("#queue article.call")).to_have_count(waiting)
    tour.look(queue, "queue", shown=PAYLOADS)

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
    tour.look(queue, "queue after a push (with its toast)", shown=live_payloads)
    for call in calls:
        expect(queue.locator(f"#queue #call-{call.pk}")).to_be_visible()
    assert queue.evaluate("window.notReloaded") and queue.locator("body").get_attribute("data-live") == "live"
    # The requester's run page re-read its body through htmx when the run changed.
    expect(requester_page.locator(f"#run-call-{calls[0].pk}")).to_be_visible(timeout=PUSHED)
    tour.look(requester_page, "run page after a push", shown=live_payloads + request_payloads)
    return run


def swaps_on_the_queue(tour: Tour, queue, stored: Stored) -> None:
    """htmx swaps on the open queue: an edit form, the changes a reviewer typed into it, a preview."""
    from playwright.sync_api import expect

    email = stored.calls["waiting email"]
    card = queue.locator(f"#call-{email.pk}")
    card.locator("a[data-key=e]").click()
    expect(card.locator("form.edit textarea[name=arg_body]")).to_be_visible(timeout=PUSHED)
    tour.look(queue, "edit form (htmx)")
    card.locator("textarea[name=arg_body]").fill(_lines(_fit(PAYLOADS[7::11], 9000)))
    tour.watch.expected_posts.add(f"/calls/{email.pk}/changes/")
    card.get_by_role("button", name="Show changes").click()
    expect(card.locator("table.changes")).to_be_visible(timeout=PUSHED)
    tour.look(queue, "changes (htmx)")

    refund = stored.calls["waiting refund"]
    card = queue.locator(f"#call-{refund.pk}")
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
