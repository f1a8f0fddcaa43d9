from datetime import timedelta

from django import template

register = template.Library()


@register.filter
def elapsed(delta: timedelta | None) -> str:
    """A time to decide, for people: "0.8 s", "42 s", "3 min 5 s", "2 h 10 min"."""
    if delta is None:
        return "—"
    seconds = delta.total_seconds()
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
