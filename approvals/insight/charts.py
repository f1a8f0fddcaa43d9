"""Geometry for the small inline SVG charts of the insight page.

Only numbers here; the templates draw them (rect and text elements, colours by
CSS class), so the charts need no script and no inline style under the CSP.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    rects: list[Rect]
    labels: list[Label]
    description: str


def _nice_max(value: float) -> float:
    """The axis maximum: 1, 2 or 5 times a power of ten, at least `value`."""
    if value <= 0:
        return 1
    step = 1
    while True:
        for factor in (1, 2, 5):
            if factor * step >= value:
                return factor * step
        step *= 10


def stacked_columns(
    days: Sequence[date],
    counts: Mapping[date, Mapping[str, int]],
    series: Sequence[tuple[str, str]],
    *,
    width: int = 720,
    height: int = 110,
) -> Chart:
    """One column per day, stacked by series (key, label), bottom to top in the order given."""
    left, bottom, top = 34, 18, 8
    plot_height = height - bottom - top
    totals = [sum(counts.get(day, {}).get(key, 0) for key, _ in series) for day in days]
    y_max = _nice_max(max(totals, default=0))
    slot = (width - left) / max(len(days), 1)
    column = max(slot * 0.8, 1)
    rects = []
    for i, day in enumerate(days):
        x = left + i * slot + (slot - column) / 2
        rects += _column(
            day, counts.get(day, {}), series, x=x, width=column, base=top + plot_height, scale=plot_height / y_max
        )
    labels = [Label(left - 4, top + 4, f"{y_max:g}", "end"), Label(left - 4, top + plot_height, "0", "end")]
    labels += _day_labels(days, left=left, slot=slot, y=height - 4)
    description = f"Calls per day from {days[0]:%d %b} to {days[-1]:%d %b}" if days else "No days"
    return Chart(width, height, rects, labels, description)


def _column(day: date, counts: Mapping[str, int], series, *, x: float, width: float, base: float, scale: float):
    """One day's stacked rectangles, bottom to top."""
    rects, y = [], base
    for key, name in series:
        n = counts.get(key, 0)
        if not n:
            continue
        h = n * scale
        y -= h
        title = f"{day:%a %d %b}: {n} {name.lower()}"
        rects.append(Rect(round(x, 1), round(y, 1), round(width, 1), round(h, 1), f"o-{key}", title))
    return rects


def _day_labels(days: Sequence[date], *, left: float, slot: float, y: float) -> list[Label]:
    """The first, middle and last day under the columns."""
    if not days:
        return []
    last = len(days) - 1
    anchors = {0: "start", last: "end"}
    labels = []
    for i in sorted({0, len(days) // 2, last}):
        x = left + i * slot if i == 0 else left + (i + 1) * slot if i == last else left + (i + 0.5) * slot
        labels.append(Label(round(x, 1), y, f"{days[i]:%d %b}", anchors.get(i, "middle")))
    return labels


def bars(
    rows: Sequence[tuple[str, Sequence[tuple[float, str, str]]]],
    *,
    width: int = 720,
    row_height: int = 22,
    label_width: int = 150,
    unit: str = "",
) -> Chart:
    """Horizontal bars, one row per (label, [(value, css, title), ...]); the values of a row overlap, longest first."""
    right = 60
    plot_width = width - label_width - right
    x_max = _nice_max(max((value for _, values in rows for value, _, _ in values), default=0))
    rects, labels = [], []
    for i, (label, values) in enumerate(rows):
        y = i * row_height
        labels.append(Label(label_width - 6, y + row_height * 0.7, label, "end"))
        for value, css, title in sorted(values, key=lambda v: -v[0]):
            w = plot_width * value / x_max
            rects.append(Rect(label_width, y + 3, round(w, 1), row_height - 6, css, title))
        if values:
            longest = max(value for value, _, _ in values)
            labels.append(
                Label(
                    round(label_width + plot_width * longest / x_max + 4, 1),
                    y + row_height * 0.7,
                    f"{longest:g}{unit}",
                    "start",
                )
            )
    height = max(len(rows), 1) * row_height
    return Chart(width, height, rects, labels, f"{len(rows)} rows, scale 0 to {x_max:g}{unit}")
