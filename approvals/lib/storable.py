"""What the database can store and Python can read, checked before anything is written or queried.

PostgreSQL refuses a NUL character (U+0000) in text and JSON; UTF-8 cannot encode a
lone surrogate (U+D800 to U+DFFF); JSON has no NaN or Infinity; Python reads at most
4,300 digits of an integer and recurses on nesting. Values from outside (a model's
reply, a reviewer's form, a URL) are checked here: refused with a message that names
the problem where someone can fix it, escaped where they are only recorded and shown.
"""

import json
import math
import re
import sys
from collections.abc import Iterable

MAX_DEPTH = 32
MAX_DIGITS = sys.get_int_max_str_digits() or 4300
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class Unreadable(ValueError):
    """Text that is not JSON we can read; the message says why, for a person."""


class _LongNumber:
    """An integer with more digits than Python converts, kept so the field can be named."""

    def __init__(self, digits: str):
        self.digits = len(digits.lstrip("-"))


def text_problem(text: str) -> str:
    """Why this text cannot be stored ("" when it can)."""
    if "\x00" in text:
        return "Contains a NUL character (U+0000), which cannot be stored."
    surrogate = _SURROGATE.search(text)
    if surrogate:
        return f"Contains an unpaired surrogate (U+{ord(surrogate.group()):04X}), which cannot be stored."
    return ""


def texts_problem(texts: Iterable[str]) -> str:
    """The first problem among several texts (a query string's names and values, say)."""
    return next((problem for text in texts if (problem := text_problem(text))), "")


def escape(text: str, limit: int | None = None) -> str:
    """A form that can be stored and shown: NUL and lone surrogates as \\u escapes, cut to `limit` with "…"."""
    text = _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def load_json(text: str):
    """Parse untrusted JSON; raises Unreadable. Over-long integers are left for json_problems to name."""
    try:
        return json.loads(text, parse_int=_read_int)
    except RecursionError:
        raise Unreadable(f"it is nested too deeply (more than {MAX_DEPTH} levels are refused)")
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{exc.msg} (line {exc.lineno}, column {exc.colno})")
    except ValueError as exc:
        raise Unreadable(str(exc))


def _read_int(digits: str):
    return _LongNumber(digits) if len(digits.lstrip("-")) > MAX_DIGITS else int(digits)


def json_problems(value) -> dict[str, list[str]]:
    """Field by field ("amount", "items.0.name", "__all__" for the whole), what cannot be stored or read."""
    problems: dict[str, list[str]] = {}
    stack: list[tuple[tuple[str, ...], object]] = [((), value)]
    while stack:
        path, item = stack.pop()
        name = ".".join(path) or "__all__"
        if len(path) > MAX_DEPTH:
            problems.setdefault(name, []).append(f"Nested too deeply (more than {MAX_DEPTH} levels).")
            continue
        if isinstance(item, dict):
            for key, inner in item.items():
                if text_problem(str(key)):
                    problems.setdefault(name, []).append("A field name " + text_problem(str(key)).lower())
                else:
                    stack.append(((*path, str(key)), inner))
        elif isinstance(item, list):
            stack.extend(((*path, str(i)), inner) for i, inner in enumerate(item))
        elif problem := _scalar_problem(item):
            problems.setdefault(name, []).append(problem)
    return problems


def _scalar_problem(item) -> str:
    if isinstance(item, str):
        return text_problem(item)
    if isinstance(item, float) and not math.isfinite(item):
        return "Must be a finite number."
    if isinstance(item, _LongNumber):
        return f"This number has {item.digits} digits; at most {MAX_DIGITS} can be read."
    return ""
