"""The reliability harness: Celery workers killed at random points after approvals.

A cluster of real processes on PostgreSQL and Redis — a turns worker and a tools worker
(prefork, one pool process each) and beat, with short leases set through environment
variables — has its workers killed with SIGKILL, 0-0.25 s after approvals (RELIABILITY_WORKER_DELAY):
only the pool process, only the main process (its pool process is orphaned), or the whole
worker (its process group). A killed main process is started again at once. Each trial then
waits until every approved call has run and every run is completed, waiting for a person or
failed with a reason.

tests/e2e/test_reliability.py drives it with the other targets (tests/e2e/reliability_targets.py).
"""

import contextlib
import os
import random
import signal
import statistics
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.utils import timezone

from agents import services as agent_services
from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from shop.models import Customer, Order, Refund
from tests.stack import Processes, start_worker

# The leases and the sweep as the defaults have them (a claim, on a model turn or an execution, renewed while the
# model or the tool runs, so a dead worker's claim lapses within its lease).
TIMINGS = {
    "TURN_LEASE_SECONDS": "10",
    "EXECUTION_LEASE_SECONDS": "6",
    "SWEEP_GRACE_SECONDS": "10",
    "SWEEP_INTERVAL_SECONDS": "3",
    "SWEEP_MAX_ATTEMPTS": "5",
    "BROKER_VISIBILITY_TIMEOUT": "60",
    "OPENAI_TIMEOUT": "5",
    "OPENAI_MAX_RETRIES": "1",
}
MODES = ("pool process", "main process", "whole worker")
KINDS = {"turns": ("turns",), "tools": ("default", "tools")}
RUNS_PER_TRIAL = 3
# The kill comes 0-DELAY s after the approvals: on a quiet machine the work they start (three executions, three
# model turns) is over within about 0.3 s, so a longer window mostly kills an idle worker.
DELAY = float(os.environ.get("RELIABILITY_WORKER_DELAY", "0.25"))
SETTLE_LIMIT = 120.0


def children(pid: int) -> list[int]:
    """The processes whose parent is pid (a prefork worker's pool), read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


class Cluster:
    """A turns worker, a tools worker (which also takes the periodic tasks) and beat."""

    def __init__(self, env: dict, queue: str, schedule: Path):
        self.processes = Processes({**env, **TIMINGS})
        self.queue = queue
        self.workers: dict = {}
        self.started = 0
        for kind in KINDS:
            self.start(kind)
        beat = ("-m", "celery", "-A", "reviewhub", "beat", "-s", str(schedule), "-l", "warning")
        self.processes.start(*beat, log_name=f"reliability-beat-{queue}")

    def start(self, kind: str) -> None:
        self.started += 1
        name = f"reliability-{self.queue}-{kind}-{self.started}"
        self.workers[kind] = start_worker(
            self.processes, self.queue, 1, kinds=KINDS[kind], pool="prefork", log_name=name
        )

    def kill(self, kind: str, mode: str) -> bool:
        """SIGKILL part of a worker; start a dead main process again. Returns whether something was killed."""
        main = self.workers[kind]
        if mode == "pool process":
            wait_for(lambda: children(main.pid), 30)  # a worker started just now may not have forked it yet
            pool = children(main.pid)
            for pid in pool:
                os.kill(pid, signal.SIGKILL)
            return bool(pool)
        if mode == "main process":
            os.kill(main.pid, signal.SIGKILL)
        else:
            os.killpg(main.pid, signal.SIGKILL)
        main.wait()
        self.start(kind)
        return True

    def clear_orphans(self) -> None:
        """Pool processes left behind by a killed main process (they share its process group)."""
        for proc in self.processes.procs:
            if proc.poll() is not None:
                with contextlib.suppress(ProcessLookupError):  # nothing was left
                    os.killpg(proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        self.processes.stop()
        self.clear_orphans()


@dataclass
class Trial:
    mode: str
    target: str
    delay: float
    killed: bool = False
    calls: int = 0
    in_flight: str = ""  # what was unfinished when the kill came
    sweeps: int = 0  # how often the sweep resumed the trial's runs after the kill
    settle: float | None = None  # seconds from the worker being back to everything settled
    duplicates: int = 0  # refunds beyond the first of a call
    outcomes: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def start_refund_run(number: int, requester) -> Run:
    order = Order.objects.create(
        number=f"A-{number:04d}",
        customer=Customer.objects.order_by("pk").first(),
        total=Decimal("100.00"),
        status=Order.Status.DELIVERED,
        items="Test kettle (1)",
    )
    request = f"Order {order.number} arrived broken. Please refund $25."  # a rule runs $20 or less unreviewed
    return agent_services.run_start(agent_name="support", request=request, requested_by=requester)


def approve_when_pending(runs: list[Run], reviewer, trial: Trial) -> list[int]:
    pending = ToolCall.objects.filter(run__in=runs, status=ToolCall.Status.PENDING)
    if not wait_for(lambda: pending.count() == len(runs), SETTLE_LIMIT):
        trial.problems.append(f"only {pending.count()} of {len(runs)} runs reached their approval")
    calls = list(pending)
    for call in calls:
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    return [call.pk for call in calls]


def in_flight(runs: list[Run], call_ids: list[int]) -> str:
    calls = ToolCall.objects.filter(pk__in=call_ids)
    parts = {
        "approved": calls.filter(status=ToolCall.Status.APPROVED).count(),
        "executing": calls.filter(status=ToolCall.Status.EXECUTING).count(),
        "thinking": Run.objects.filter(pk__in=[r.pk for r in runs], thinking=True).count(),
    }
    return ", ".join(f"{count} {name}" for name, count in parts.items() if count) or "nothing"


def run_settled(run: Run) -> bool:
    if run.status == Run.Status.COMPLETED:
        return True
    if run.status == Run.Status.FAILED:
        return bool(run.last_error)
    calls = run.tool_calls
    waiting = (
        calls.filter(status=ToolCall.Status.PENDING).exists()
        and not calls.filter(status__in=ToolCall.RUNNABLE).exists()
    )
    return run.status == Run.Status.WAITING and waiting


def settled(run_ids: list[int], call_ids: list[int]) -> bool:
    if ToolCall.objects.filter(pk__in=call_ids, status__in=ToolCall.RUNNABLE).exists():
        return False
    return all(run_settled(run) for run in Run.objects.filter(pk__in=run_ids))


def check(trial: Trial, run_ids: list[int], call_ids: list[int]) -> None:
    """Every approved call executed exactly once; every run ended as it may."""
    for call in ToolCall.objects.filter(pk__in=call_ids).select_related("run"):
        refunds = Refund.objects.filter(idempotency_key=call.idempotency_key).count()
        trial.duplicates += max(0, refunds - 1)
        if call.status != ToolCall.Status.EXECUTED or refunds != 1:
            trial.problems.append(f"call {call.pk}: {call.status}, {refunds} refund(s)")
        if "already issued" in call.output:
            trial.problems.append(f"call {call.pk}: told the model {call.output!r}")
    for run in Run.objects.filter(pk__in=run_ids):
        trial.outcomes[run.status] = trial.outcomes.get(run.status, 0) + 1
        if not run_settled(run):
            trial.problems.append(f"run {run.pk}: {run.status}, thinking={run.thinking}, {run.last_error!r}")


def run_trial(cluster: Cluster, rng: random.Random, index: int, mode: str, reviewer, requester) -> Trial:
    trial = Trial(mode=mode, target=rng.choice(sorted(KINDS)), delay=rng.uniform(0, DELAY))
    runs = [start_refund_run(2000 + index * RUNS_PER_TRIAL + i, requester) for i in range(RUNS_PER_TRIAL)]
    call_ids = approve_when_pending(runs, reviewer, trial)
    trial.calls = len(call_ids)
    time.sleep(trial.delay)
    trial.in_flight = in_flight(runs, call_ids)
    killed_at = timezone.now()
    trial.killed = cluster.kill(trial.target, mode)
    back = time.monotonic()
    run_ids = [run.pk for run in runs]
    if wait_for(lambda: settled(run_ids, call_ids), SETTLE_LIMIT):
        trial.settle = time.monotonic() - back
    else:
        trial.problems.append(f"not settled {SETTLE_LIMIT:.0f} s after the worker came back")
    check(trial, run_ids, call_ids)
    resumed = AuditEvent.objects.filter(run_id__in=run_ids, kind="resumed", created_at__gte=killed_at)
    trial.sweeps = resumed.filter(payload__has_key="sweep").count()
    cluster.clear_orphans()
    return trial


def _times(trials: list[Trial]) -> dict:
    settles = sorted(t.settle for t in trials if t.settle is not None)
    if not settles:
        return {"p50_s": None, "max_s": None}
    return {"p50_s": round(statistics.median(settles), 1), "max_s": round(settles[-1], 1)}


def summary(trials: list[Trial]) -> dict:
    outcomes: dict = {}
    for trial in trials:
        for status, count in trial.outcomes.items():
            outcomes[status] = outcomes.get(status, 0) + count
    return {
        "kills": len(trials),
        "by_mode": {mode: sum(t.mode == mode for t in trials) for mode in MODES},
        "by_target": {kind: sum(t.target == kind for t in trials) for kind in KINDS},
        "nothing_to_kill": sum(not t.killed for t in trials),
        "kills_with_work_in_flight": sum(t.in_flight != "nothing" for t in trials),
        "kills_the_sweep_recovered": sum(t.sweeps > 0 for t in trials),
        "sweep_resumptions": sum(t.sweeps for t in trials),
        "runs": outcomes,
        "approved_calls": sum(t.calls for t in trials),
        "duplicates": sum(t.duplicates for t in trials),
        "settle": _times(trials),
        "settle_with_work_in_flight": _times([t for t in trials if t.in_flight != "nothing"]),
        "settle_by_mode": {mode: _times([t for t in trials if t.mode == mode]) for mode in MODES},
        "problems": [f"kill {i + 1} ({t.mode}, {t.target}): {p}" for i, t in enumerate(trials) for p in t.problems],
    }
