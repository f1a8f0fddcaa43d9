"""How values read to people: durations, JSON for display, and what an edit changed."""

import json
import unicodedata
from datetime import timedelta
from decimal import Decimal, InvalidOperation

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_hidden(ch: str) -> bool:
    """An invisible or bidirectional control character (not newline or tab)."""
    if ch in "\n\t":
        return False
    return ch in BIDI or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


def visible(value) -> str:
    """Plain text with invisible and bidirectional characters written as [U+202E]."""
    return "".join(f"[U+{ord(ch):04X}]" if is_hidden(ch) else ch for ch in str(value if value is not None else ""))


def money(value) -> str:
    """An amount of dollars as people write it: $490.00, $1,250.50."""
    return f"${Decimal(str(value)):,.2f}"


def key_text(value, *, is_money: bool = False):
    """A key field's value as the reviewer's lists show it: money as money, a whole float as the integer it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if is_money:
        try:
            return money(value)
        except InvalidOperation:
            return value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def sentence(text: str) -> str:
    """The text as a sentence: stripped, ending in a full stop unless it ends in one already."""
    text = text.strip()
    return text if not text or text[-1] in ".!?…:;" else text + "."


def duration_text(delta: timedelta, *, coarse: bool = False) -> str:
    """ "0.8 s", "42 s", "3 min 5 s", "1 h", "2 h 10 min".

    `coarse` (a countdown) shows whole seconds, and no seconds once it is a minute or longer.
    """
    seconds = delta.total_seconds()
    if seconds < 10 and seconds != int(seconds) and not coarse:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{int(seconds)} s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if seconds and not hours and not coarse:
        parts.append(f"{seconds} s")
    return " ".join(parts)


def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def arguments_diff(before: dict | None, after: dict | None) -> list[dict]:
    """Field by field, what differs between two sets of arguments."""
    before, after = before or {}, after or {}
    return [
        {
            "name": key,
            "before": before.get(key),
            "after": after.get(key),
            "added": key not in before,
            "removed": key not in after,
        }
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key) or (key in before) != (key in after)
    ]


def edit_summary(original: dict, edited: dict) -> str:
    """A plain statement of what the reviewer changed, for the model."""
    rows = arguments_diff(original, edited)
    changes = [f"{c['name']} from {key_text(c['before'])!r} to {key_text(c['after'])!r}" for c in rows]
    return (
        "A human reviewer edited this call before it ran: changed "
        + "; ".join(changes)
        + ". The call ran with the reviewer's arguments; do not retry the original."
    )
