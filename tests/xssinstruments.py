"""The XSS test's instruments: what a page ran, sent or reported (Watch), what its DOM holds (dom_report),
and a control server that serves payloads raw, to prove the instruments catch them."""

import contextlib
import re
import unicodedata
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings as django_settings

from approvals.lib.text import is_hidden

from .payloads import ATTACKER

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
    "hx-select",
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
