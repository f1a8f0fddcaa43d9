"""The numbers an auditor asks for, aggregated in SQL over a window of days.

- outcomes: per day and per tool, how many calls ran without review, were
  approved, approved with edits, rejected, or expired (by the day they were proposed),
  and for the other pauses, how many questions were answered and turns continued with
  a note or replied to by a reviewer;
- decision times: per tool, the median and 90th percentile from proposal to the
  final human decision (for decisions made in the window);
- reviewer load: each reviewer's decisions in the window, and whether they approve
  faster than anyone could read: the median time from the moment that reviewer
  opened the call (their review_claimed event) to their approval, or from the
  proposal where they left no such event (an upper bound on the time they had);
  under FAST_APPROVAL they cannot have read the facts;
- shadow rules: how often each rule in shadow mode agreed with people's decisions
  on the calls proposed in the window;
- revision rounds: per tool, how many proposals needed a second round or more
  (approvals/kinds/revision.py).

The page's "Rules you could add" is approvals/insight/learned.py's, over the same window.

Every query filters on an indexed date column, so the cost follows the window
(30 days by default), not the size of the record.

Beside it: learned.py, rules proposed from decisions; charts.py, the inline SVG charts' geometry;
percentile.py, percentile_cont in the ORM."""

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django import forms
from django.db.models import (
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FilteredRelation,
    OuterRef,
    Q,
    Subquery,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from approvals.insight import charts
from approvals.insight.percentile import Percentile
from approvals.kinds import revision as revisions
from approvals.models import AuditEvent, Decision, ShadowResult, ToolCall
from approvals.tools import registry

AUTO_RUN = "auto_run"
OUTCOMES = (
    (AUTO_RUN, "Auto-run"),
    (Decision.Verdict.APPROVE.value, "Approved"),
    (Decision.Verdict.EDIT.value, "Edited"),
    (Decision.Verdict.REJECT.value, "Rejected"),
    (Decision.Verdict.EXPIRE.value, "Expired"),
)
# The other pauses' own verdicts: a column only where a call in the window had one.
PAUSE_OUTCOMES = (
    (Decision.Verdict.ANSWER.value, "Answered"),
    (Decision.Verdict.NOTE.value, "Continued with a note"),
    (Decision.Verdict.REPLY.value, "Replied by a reviewer"),
)
ALL_OUTCOMES = OUTCOMES + PAUSE_OUTCOMES
FAST_APPROVAL = timedelta(seconds=3)
DEFAULT_DAYS = 30
MAX_DAYS = 366


def outcome_filter(outcome: str) -> Q:
    """Calls with this outcome: the policy ran them, or the decision that settled their last review round
    has this verdict."""
    if outcome == AUTO_RUN:
        return Q(policy__action="run")
    settled = Decision.objects.filter(
        tool_call=OuterRef("pk"), final=True, round=OuterRef("review_round"), verdict=outcome
    )
    return Q(Exists(settled))


# --- a percentile that works on PostgreSQL and SQLite --------------------------------------


# --- the window ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    first: date
    last: date  # included
    tool: str = ""

    @property
    def since(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.first, time.min))

    @property
    def before(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.last + timedelta(days=1), time.min))

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]

    @classmethod
    def default(cls, tool: str = "") -> "Window":
        today = timezone.localdate()
        return cls(today - timedelta(days=DEFAULT_DAYS - 1), today, tool)


class WindowForm(forms.Form):
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="Until (included)", widget=forms.DateInput(attrs={"type": "date"}))
    tool = forms.ChoiceField(
        required=False, choices=lambda: [("", "All tools")] + [(t.name, t.name) for t in registry.all()]
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        default = Window.default()
        self.fields["since"].initial, self.fields["until"].initial = default.first, default.last

    def clean(self):
        super().clean()
        data = self.cleaned_data
        default = Window.default()
        last = data.get("until") or default.last
        first = data.get("since") or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            raise forms.ValidationError("The first day is after the last.")
        if (last - first).days >= MAX_DAYS:
            raise forms.ValidationError(f"Choose at most {MAX_DAYS} days.")
        data["window"] = Window(first, last, data.get("tool") or "")
        return data

    def window(self) -> Window:
        """The chosen window, or the last 30 days if nothing (valid) was chosen."""
        if self.is_bound and self.is_valid():
            return self.cleaned_data["window"]
        return Window.default()


# --- the numbers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolOutcomes:
    tool: str
    per_day: dict[date, Counter]
    chart: charts.Chart
    labels: tuple = OUTCOMES  # the columns: OUTCOMES, and the pause outcomes the window holds

    @property
    def totals(self) -> list[int]:
        return [sum(day[key] for day in self.per_day.values()) for key, _ in self.labels]

    @property
    def total(self) -> int:
        return sum(self.totals)

    @property
    def rows(self) -> list[tuple[date, list[int]]]:
        return [(day, [self.per_day[day][key] for key, _ in self.labels]) for day in sorted(self.per_day)]


def _calls(window: Window):
    calls = ToolCall.objects.filter(created_at__gte=window.since, created_at__lt=window.before)
    return calls.filter(tool_name=window.tool) if window.tool else calls


def outcome_counts(window: Window) -> dict[str, dict[date, Counter]]:
    """{tool: {day: Counter(outcome: calls)}}, by the day each call was proposed."""
    rows = (
        _calls(window)
        # The decision that settled the last review round (a call sent back to the queue is
        # reviewed again). A decision never precedes its call: the date condition changes
        # no result and lets the database read only the window's decisions, by their index.
        .annotate(
            final=FilteredRelation(
                "decisions",
                condition=Q(
                    decisions__final=True, decisions__round=F("review_round"), decisions__created_at__gte=window.since
                ),
            )
        )
        .values(
            day=TruncDate("created_at"), tool=F("tool_name"), verdict=F("final__verdict"), action=KT("policy__action")
        )
        .annotate(n=Count("pk"))
        .order_by()
    )
    counts: dict[str, dict[date, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for row in rows:
        outcome = row["verdict"] or (AUTO_RUN if row["action"] == "run" else None)
        if outcome:
            counts[row["tool"]][row["day"]][outcome] += row["n"]
    return counts


def outcomes(window: Window) -> list[ToolOutcomes]:
    days, counts = window.days, outcome_counts(window)
    held = {key for per_day in counts.values() for day in per_day.values() for key in day}
    labels = OUTCOMES + tuple(label for label in PAUSE_OUTCOMES if label[0] in held)
    return [
        ToolOutcomes(tool, dict(per_day), charts.stacked_columns(days, per_day, labels), labels)
        for tool, per_day in sorted(counts.items())
    ]


def _decisions(window: Window):
    decisions = Decision.objects.filter(
        reviewer__isnull=False, created_at__gte=window.since, created_at__lt=window.before
    )
    return decisions.filter(tool_call__tool_name=window.tool) if window.tool else decisions


WAIT = ExpressionWrapper(F("created_at") - F("tool_call__created_at"), output_field=DurationField())


@dataclass(frozen=True)
class DecisionTime:
    tool: str
    decisions: int
    p50: timedelta
    p90: timedelta


def decision_times(window: Window) -> list[DecisionTime]:
    """Per tool: from proposal to the human decision that settled the call, for decisions made in the window."""
    rows = (
        _decisions(window)
        .filter(final=True, round=F("tool_call__review_round"))
        .values(tool=F("tool_call__tool_name"))
        .annotate(n=Count("pk"), p50=Percentile(WAIT, 0.5), p90=Percentile(WAIT, 0.9))
        .order_by("tool")
    )
    return [DecisionTime(r["tool"], r["n"], r["p50"], r["p90"]) for r in rows]


@dataclass(frozen=True)
class ReviewerLoad:
    name: str
    decisions: int
    approved: int
    edited: int
    rejected: int
    median: timedelta
    approve_median: timedelta | None

    @property
    def too_fast(self) -> bool:
        return self.approve_median is not None and self.approve_median < FAST_APPROVAL


# When this reviewer opened the call (their latest claim before deciding), else when it was proposed.
OPENED = Coalesce(
    Subquery(
        AuditEvent.objects.filter(
            tool_call=OuterRef("tool_call"),
            kind=AuditEvent.Kind.REVIEW_CLAIMED,
            actor=OuterRef("reviewer"),
            created_at__lte=OuterRef("created_at"),
        )
        .order_by("-created_at")
        .values("created_at")[:1]
    ),
    F("tool_call__created_at"),
)
READ_TIME = ExpressionWrapper(F("created_at") - OPENED, output_field=DurationField())


def reviewer_load(window: Window) -> list[ReviewerLoad]:
    """Each reviewer's decisions in the window (every decision counts, final or one of N)."""
    approvals = Q(verdict=Decision.Verdict.APPROVE)
    rows = (
        _decisions(window)
        .values(name=F("reviewer__username"))
        .annotate(
            n=Count("pk"),
            approved=Count("pk", filter=approvals),
            edited=Count("pk", filter=Q(verdict=Decision.Verdict.EDIT)),
            rejected=Count("pk", filter=Q(verdict=Decision.Verdict.REJECT)),
            median=Percentile(WAIT, 0.5),
            approve_median=Percentile(READ_TIME, 0.5, filter=approvals),
        )
        .order_by("-n", "name")
    )
    return [
        ReviewerLoad(r["name"], r["n"], r["approved"], r["edited"], r["rejected"], r["median"], r["approve_median"])
        for r in rows
    ]


@dataclass(frozen=True)
class Agreement:
    """How a shadow rule did (PolicyRule.shadow_counts): the calls it matched, how many of them people decided,
    how often it would have decided as they did."""

    matched: int
    compared: int
    agreed: int

    @property
    def percent(self) -> int | None:
        return round(100 * self.agreed / self.compared) if self.compared else None


@dataclass(frozen=True)
class ShadowAgreement(Agreement):
    name: str
    tool: str
    outcome: str


def shadow_agreement(window: Window) -> list[ShadowAgreement]:
    """Per shadow rule: calls proposed in the window it matched, how many people decided, how many it agreed with."""
    results = ShadowResult.objects.filter(
        tool_call__created_at__gte=window.since, tool_call__created_at__lt=window.before
    )
    if window.tool:
        results = results.filter(tool_call__tool_name=window.tool)
    rows = (
        results.values("rule_id", "outcome", name=F("rule__name"), tool=F("rule__tool_name"))
        .annotate(
            matched=Count("pk"),
            compared=Count("pk", filter=Q(agreed__isnull=False)),
            agreed=Count("pk", filter=Q(agreed=True)),
        )
        .order_by("tool", "name")
    )
    return [
        ShadowAgreement(
            name=row["name"],
            tool=row["tool"],
            outcome=row["outcome"],
            matched=row["matched"],
            compared=row["compared"],
            agreed=row["agreed"],
        )
        for row in rows
    ]


@dataclass(frozen=True)
class Report:
    window: Window
    outcomes: list[ToolOutcomes]
    decision_times: list[DecisionTime]
    reviewers: list[ReviewerLoad]
    shadow_rules: list[ShadowAgreement]
    rounds: list[revisions.ToolRounds]

    @property
    def outcome_labels(self) -> tuple:
        return self.outcomes[0].labels if self.outcomes else OUTCOMES

    @property
    def decision_time_chart(self) -> charts.Chart:
        return charts.bars(
            [
                (
                    t.tool,
                    [
                        (_seconds(t.p90), "p90", f"{t.tool}: 90% within {_seconds(t.p90):g} s"),
                        (_seconds(t.p50), "p50", f"{t.tool}: half within {_seconds(t.p50):g} s"),
                    ],
                )
                for t in self.decision_times
            ],
            unit=" s",
        )

    @property
    def reviewer_chart(self) -> charts.Chart:
        return charts.bars(
            [
                (r.name, [(r.decisions, "load-fast" if r.too_fast else "load", f"{r.name}: {r.decisions} decisions")])
                for r in self.reviewers
            ]
        )


def _seconds(delta: timedelta | None) -> float:
    return round(delta.total_seconds(), 1) if delta is not None else 0.0


def report(window: Window) -> Report:
    parts = outcomes(window), decision_times(window), reviewer_load(window), shadow_agreement(window)
    return Report(window, *parts, revisions.rounds_per_tool(_calls(window)))
