import json
import unicodedata

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _is_hidden(ch: str) -> bool:
    if ch in "\n\t":
        return False
    return ch in BIDI or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


@register.filter
def reveal(value) -> str:
    """Escape untrusted text and make invisible and bidirectional characters visible."""
    out = []
    for ch in str(value if value is not None else ""):
        if _is_hidden(ch):
            out.append(f'<mark class="hidden-char" title="invisible character">[U+{ord(ch):04X}]</mark>')
        else:
            out.append(escape(ch))
    return mark_safe("".join(out))


@register.filter
def visible(value) -> str:
    """Plain text with invisible and bidirectional characters written as [U+202E]: for a <title>, an
    attribute or SVG text, where reveal's markup cannot go (the template still escapes the result)."""
    return "".join(f"[U+{ord(ch):04X}]" if _is_hidden(ch) else ch for ch in str(value if value is not None else ""))


@register.filter
def duration(delta) -> str:
    if delta is None:
        return "no limit"
    seconds = int(delta.total_seconds())
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min"
    return f"{seconds} s"


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def label(key) -> str:
    """A fact's key as a label: "order_total" -> "Order total"."""
    return str(key).replace("_", " ").capitalize()
