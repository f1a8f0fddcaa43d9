"""Catch rates: of the practice calls planted in a window, how many each reviewer, tool and group caught.

caught / (caught + missed + not seen) with a 95 % Wilson score interval; calls still waiting are counted
apart, never in the rate. Beside it, from the real calls' decisions (their trail records,
approvals/services/shown.py): the median time from opening the card to deciding, on practice calls against real
ones, and the other signs of inattention: how many real calls were approved, how many in a batch, how many within
FAST_APPROVAL of opening the card, and how many with the card's facts never in view."""

from collections import defaultdict
from dataclasses import dataclass, field
from math import sqrt
from statistics import median

from approvals.insight import FAST_APPROVAL, Window, charts
from approvals.models import AuditEvent

from .models import PracticeCall

Z95 = 1.959964  # the normal quantile of a two-sided 95 % interval
NOBODY = "(nobody: expired)"
ANY_GROUP = "(any reviewer)"
BY = {"reviewer": "Reviewer", "tool": "Tool", "group": "Group"}
TREND = (("caught", "Caught"), ("missed", "Missed"), ("not_seen", "Not seen"))


def wilson(caught: int, planted: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of caught/planted (None when nothing was planted)."""
    if planted <= 0:
        return None
    p = caught / planted
    denominator = 1 + z * z / planted
    centre = (p + z * z / (2 * planted)) / denominator
    margin = z * sqrt(p * (1 - p) / planted + z * z / (4 * planted * planted)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


@dataclass
class CatchRow:
    label: str
    caught: int = 0
    missed: int = 0
    not_seen: int = 0
    waiting: int = 0
    practice_seconds: list[float] = field(default_factory=list)
    real_seconds: list[float] = field(default_factory=list)
    real_decided: int = 0
    real_approved: int = 0
    real_batch: int = 0
    real_quick: int = 0  # approved within FAST_APPROVAL of opening the card
    real_unseen: int = 0  # approved with the card's facts never in view (card.js said so)

    @property
    def planted(self) -> int:
        """Practice calls settled: decided or expired (the rate's denominator)."""
        return self.caught + self.missed + self.not_seen

    @property
    def rate(self) -> float | None:
        return self.caught / self.planted if self.planted else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.caught, self.planted)

    @property
    def percent(self) -> str:
        return "–" if self.rate is None else f"{self.rate:.0%}"

    @property
    def interval_percent(self) -> str:
        low_high = self.interval
        return "–" if low_high is None else f"{low_high[0]:.0%}–{low_high[1]:.0%}"

    @property
    def approval_percent(self) -> str:
        """Of the real calls decided, the share approved (as proposed or edited)."""
        return f"{self.real_approved / self.real_decided:.0%}" if self.real_decided else "–"

    @property
    def practice_median(self) -> float | None:
        return round(median(self.practice_seconds), 1) if self.practice_seconds else None

    @property
    def real_median(self) -> float | None:
        return round(median(self.real_seconds), 1) if self.real_seconds else None


def practice_calls(window: Window):
    calls = PracticeCall.objects.filter(planted_at__gte=window.since, planted_at__lt=window.before)
    calls = calls.filter(tool_name=window.tool) if window.tool else calls
    return calls.select_related("reviewer", "group", "tool_call").order_by("planted_at", "id")


def _key(practice: PracticeCall, by: str) -> str:
    if by == "reviewer":
        return practice.reviewer.get_username() if practice.reviewer else NOBODY
    if by == "group":
        return practice.group.name if practice.group else ANY_GROUP
    return practice.tool_name


APPROVING = ("approve", "edit")


def _real_decisions(window: Window, by: str, rows: dict) -> None:
    """Each real decision (its trail record) into its row: counted, approved or not, in a batch or not, and its
    time from opening to deciding."""
    events = AuditEvent.objects.filter(
        kind=AuditEvent.Kind.DECIDED, created_at__gte=window.since, created_at__lt=window.before, actor__isnull=False
    ).exclude(tool_call__practice__isnull=False)
    if window.tool:
        events = events.filter(tool_call__tool_name=window.tool)
    fields = ("payload", "actor__username", "tool_call__tool_name", "tool_call__review_group__name")
    for payload, username, tool, group in events.values_list(*fields):
        row = rows.get({"reviewer": username, "tool": tool, "group": group or ANY_GROUP}[by])
        if row is not None:
            _count(row, payload or {})


def _count(row: CatchRow, payload: dict) -> None:
    shown = payload.get("shown") or {}
    row.real_decided += 1
    approved = payload.get("verdict") in APPROVING
    row.real_approved += approved
    row.real_batch += shown.get("channel") == "batch"
    row.real_unseen += approved and shown.get("facts_in_view") is False
    seconds = shown.get("seconds_from_open")
    row.real_quick += approved and isinstance(seconds, (int, float)) and seconds < FAST_APPROVAL.total_seconds()
    if isinstance(seconds, (int, float)):
        row.real_seconds.append(float(seconds))


def catch_rates(window: Window, by: str = "reviewer") -> list[CatchRow]:
    """One row per reviewer (or tool, or group) that practice calls in the window went to."""
    rows: dict[str, CatchRow] = defaultdict(lambda: CatchRow(""))
    for practice in practice_calls(window):
        row = rows[_key(practice, by)]
        outcome = practice.settled_outcome
        if outcome == PracticeCall.Outcome.WAITING:
            row.waiting += 1
            continue
        setattr(row, outcome, getattr(row, outcome) + 1)
        if practice.seconds_to_decide is not None:
            row.practice_seconds.append(practice.seconds_to_decide)
    for label, row in rows.items():
        row.label = label
    _real_decisions(window, by, rows)
    return sorted(rows.values(), key=lambda row: row.label)


def totals(rows: list[CatchRow]) -> CatchRow:
    total = CatchRow("All")
    for row in rows:
        total.caught, total.missed = total.caught + row.caught, total.missed + row.missed
        total.not_seen, total.waiting = total.not_seen + row.not_seen, total.waiting + row.waiting
        total.practice_seconds += row.practice_seconds
        total.real_seconds += row.real_seconds
        total.real_decided, total.real_approved = (
            total.real_decided + row.real_decided,
            total.real_approved + row.real_approved,
        )
        total.real_batch += row.real_batch
        total.real_quick, total.real_unseen = total.real_quick + row.real_quick, total.real_unseen + row.real_unseen
    return total


def trend(window: Window) -> charts.Chart:
    """The trend: per day the practice calls were planted, how many were caught, missed and not seen."""
    per_day: dict = defaultdict(lambda: defaultdict(int))
    for practice in practice_calls(window):
        outcome = practice.settled_outcome
        if outcome != PracticeCall.Outcome.WAITING:
            per_day[practice.planted_at.astimezone(window.since.tzinfo).date()][outcome] += 1
    return charts.stacked_columns(window.days, per_day, TREND)
