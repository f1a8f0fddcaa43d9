import re

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

from approvals import access, tools
from approvals.lib import text
from approvals.lib.text import duration_text
from approvals.web import triage

register = template.Library()


# In ASCII, the hidden characters are the controls other than newline and tab (text.is_hidden).
ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@register.filter
def reveal(value) -> str:
    """Escape untrusted text and make invisible and bidirectional characters visible."""
    value = str(value if value is not None else "")
    if value.isascii() and not ASCII_HIDDEN.search(value):
        return escape(value)  # the common case, in one pass: the queue renders thousands of these
    out: list[str] = []
    start = 0
    for i, ch in enumerate(value):
        if text.is_hidden(ch):
            out.append(escape(value[start:i]))
            out.append(f'<mark class="hidden-char" title="invisible character">[U+{ord(ch):04X}]</mark>')
            start = i + 1
    out.append(escape(value[start:]))
    return mark_safe("".join(out))


@register.filter
def visible(value) -> str:
    """Plain text with invisible and bidirectional characters written as [U+202E]: for a <title>, an
    attribute or SVG text, where reveal's markup cannot go (the template still escapes the result)."""
    return text.visible(value)


@register.filter
def verdict_label(decision, kind: str) -> str:
    """`{{ decision|verdict_label:call.kind }}`: the verdict as that kind of pause's card names it."""
    return decision.label_for(kind)


@register.filter
def decided_label(call, decision) -> str:
    """`{{ call|decided_label:decision }}`: "Approved by alice" (the verdict as its kind's card names it), or the
    call's status when no person decided it (expired, cancelled)."""
    if decision is None:
        return call.get_status_display()
    return f"{decision.label_for(call.kind)} by {decision.reviewer_label}"


@register.filter
def count_label(count) -> str:
    """A count of pending calls: "12", or "1,000+" past triage.COUNT_CAP."""
    return triage.count_label(int(count or 0))


@register.filter
def time_left(delta) -> str:
    """A countdown: "no limit", "expired", "59 min"."""
    if delta is None:
        return "no limit"
    if delta.total_seconds() <= 0:
        return "expired"
    return duration_text(delta, coarse=True)


@register.filter
def age(moment) -> str:
    """How long ago: "42 s", "3 min", "2 h 10 min"."""
    return duration_text(timezone.now() - moment, coarse=True) if moment else "—"


@register.filter
def elapsed(delta) -> str:
    """A time taken: "0.8 s", "3 min 5 s", or a dash when there is none."""
    return "—" if delta is None else duration_text(delta)


@register.filter
def pretty_json(value) -> str:
    return text.pretty_json(value)


@register.filter
def label(key) -> str:
    """A fact's key as a label: "order_total" -> "Order total"."""
    return str(key).replace("_", " ").capitalize()


@register.simple_tag
def row_refusal(call, user) -> str:
    """What the queue row says when this viewer may not decide the call (access.row_refusal)."""
    return access.row_refusal(user, call)


@register.simple_tag
def offered_decisions(call) -> tuple[str, ...]:
    """{% offered_decisions call as offered %}: the decisions the call's tool offers (approvals/tools.py)."""
    return tools.offered_decisions(call)
