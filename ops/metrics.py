"""Prometheus metrics (prometheus-client), served at /metrics.

Two kinds. Counters and histograms of what happened (decisions, executions, expiries,
model calls, pushes) are kept by each process; with PROMETHEUS_MULTIPROC_DIR set in every
process's environment they are written there and summed across processes at scrape time
(prometheus-client's multiprocess mode). Gauges of what is (pending calls, the oldest one,
runs by status, stuck runs) are read from the database at scrape time, so every process
answers the same and nothing has to be kept in step.
"""

import os

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from approvals.models import AuditEvent, Run, ToolCall
from approvals.services import stuck_runs

Kind = AuditEvent.Kind
SLOW = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 86400)  # people take minutes
FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

PROPOSALS = Counter("reviewhub_proposals", "Tool calls through the gate, by outcome", ["tool", "outcome"])
DECISIONS = Counter("reviewhub_decisions", "Decisions on tool calls, by verdict", ["tool", "verdict"])
TIME_TO_DECISION = Histogram(
    "reviewhub_time_to_decision_seconds", "From proposal to the final decision", ["tool"], buckets=SLOW
)
EXECUTIONS = Counter("reviewhub_executions", "Executions of approved calls, by outcome", ["tool", "outcome"])
EXPIRIES = Counter("reviewhub_expiries", "Calls rejected by the system at their deadline", ["tool"])
ESCALATIONS = Counter("reviewhub_escalations", "Overdue calls escalated to another group", ["tool"])
RUNS_FINISHED = Counter("reviewhub_runs_finished", "Runs that ended, by status", ["status"])
MODEL_CALLS = Histogram("reviewhub_model_call_seconds", "One request to the model", ["outcome"], buckets=FAST)
MODEL_ERRORS = Counter("reviewhub_model_call_errors", "Failed requests to the model, by kind", ["kind"])
PUSH_FANOUT = Histogram(
    "reviewhub_push_fanout_seconds", "A live hint's job: read, check and render for one process's sockets", buckets=FAST
)
WEBHOOKS = Counter("reviewhub_webhook_deliveries", "Webhook deliveries to remote agents, by outcome", ["outcome"])
NOTIFICATIONS = Counter("reviewhub_notifications", "Notifications sent, by channel and outcome", ["channel", "outcome"])

RUN_ENDS: dict[str, str] = {Kind.COMPLETED: "completed", Kind.RUN_FAILED: "failed", Kind.CANCELLED: "cancelled"}
PROPOSAL_KINDS: dict[str, str] = {
    Kind.PROPOSED: "pending",
    Kind.AUTO_RUN: "run",
    Kind.INVALID: "invalid",
    Kind.FORBIDDEN: "forbidden",
}


def event_counted(event: AuditEvent) -> None:
    """Count this audit event (an observer: runs after the commit)."""
    call = event.tool_call
    tool = call.tool_name if call is not None else ""
    payload = event.payload or {}
    if event.kind in PROPOSAL_KINDS:
        PROPOSALS.labels(tool, PROPOSAL_KINDS[event.kind]).inc()
    elif event.kind == Kind.DECIDED:
        DECISIONS.labels(tool, payload.get("verdict", "")).inc()
        if payload.get("final", True) and call is not None:
            TIME_TO_DECISION.labels(tool).observe((event.created_at - call.created_at).total_seconds())
    elif event.kind in (Kind.EXECUTED, Kind.FAILED):
        EXECUTIONS.labels(tool, "executed" if event.kind == Kind.EXECUTED else "failed").inc()
    elif event.kind == Kind.EXPIRED:
        EXPIRIES.labels(tool).inc()
        if call is not None:
            TIME_TO_DECISION.labels(tool).observe((event.created_at - call.created_at).total_seconds())
    elif event.kind == Kind.ESCALATED:
        ESCALATIONS.labels(tool).inc()
    elif event.kind in RUN_ENDS:
        RUNS_FINISHED.labels(RUN_ENDS[event.kind]).inc()


def model_call_observed(seconds: float, error: str = "") -> None:
    """One request to the model took this long; `error` names the kind of failure, "" when it answered."""
    MODEL_CALLS.labels("error" if error else "ok").observe(seconds)
    if error:
        MODEL_ERRORS.labels(error).inc()


def webhook_delivered(*, ok: bool) -> None:
    WEBHOOKS.labels("delivered" if ok else "failed").inc()


class RecordCollector:
    """Gauges read from the database at scrape time: what waits, since when, and how runs stand."""

    def collect(self):
        now = timezone.now()
        pending = ToolCall.objects.filter(status=ToolCall.Status.PENDING)
        count = GaugeMetricFamily("reviewhub_pending_calls", "Calls waiting for a decision", labels=["tool", "group"])
        oldest = GaugeMetricFamily(
            "reviewhub_oldest_pending_call_age_seconds", "Age of the oldest pending call", labels=["tool"]
        )
        overdue = GaugeMetricFamily(
            "reviewhub_pending_calls_past_deadline", "Pending calls older than their time limit", labels=["tool"]
        )
        for row in pending.values("tool_name", "review_group__name").annotate(n=Count("id")).order_by():
            count.add_metric([row["tool_name"], row["review_group__name"] or ""], row["n"])
        for first in pending.values("tool_name").annotate(first=Min("created_at")).order_by():
            oldest.add_metric([first["tool_name"]], (now - first["first"]).total_seconds())
        for late in pending.filter(expires_at__lt=now).values("tool_name").annotate(n=Count("id")).order_by():
            overdue.add_metric([late["tool_name"]], late["n"])
        yield from (count, oldest, overdue, *self._runs(now))

    def _runs(self, now):
        runs = GaugeMetricFamily("reviewhub_runs", "Runs by status", labels=["status"])
        counts = dict(Run.objects.values_list("status").annotate(n=Count("id")).order_by())
        for status in Run.Status.values:
            runs.add_metric([status], counts.get(status, 0))
        stuck = GaugeMetricFamily("reviewhub_stuck_runs", "Active runs the sweep finds stuck (it takes them further)")
        stuck.add_metric([], len(stuck_runs(now=now)))
        return runs, stuck


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus's text format: this process's (or all processes', in multiprocess mode)
    counters and histograms, then the record's gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    record = CollectorRegistry()
    record.register(RecordCollector())
    return generate_latest(registry) + generate_latest(record), CONTENT_TYPE_LATEST


def measured(what: str, seconds: float, error: str = "") -> None:
    """A timing from approvals.audit.observers.measured (settings.REVIEWHUB_MEASURE)."""
    if what == "model_call":
        model_call_observed(seconds, error)
    elif what == "push_fanout":
        PUSH_FANOUT.observe(seconds)
    elif what == "webhook_delivery":
        webhook_delivered(ok=not error)
