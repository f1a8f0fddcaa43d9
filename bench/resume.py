"""Decision committed → tool body starts, in a separate warm Celery worker, at several lengths of history.

    .venv/bin/python bench/resume.py                      # histories 2, 50, 200; 30 samples each
    .venv/bin/python bench/resume.py --histories 2 200 --samples 50 --json

It starts one Celery worker (threads pool, the tools, turns and default queues of a
queue name of its own) on PostgreSQL and Redis, and the demo model server for the turn
that follows. For each sample: a run with HISTORY transcript messages and one call waiting for review; 0.1 s later
(the proposal's own notification task has run by then, as it has by the time any person decides) a reviewer
approves it (services.toolcall_decide, as the queue page does); the time is taken when the decision commits and
again on the first line of the tool body (bench/resume_tool.py, through Redis). A few samples warm up first.

The floor is measured in turns with it, sample by sample, so a busy machine weighs on both alike: a bare
Celery task on the same broker, worker, queue and task options that only notes the time (publish → body),
plus a one-row commit on the same PostgreSQL. Twice: at once after the sample (the worker and PostgreSQL still
awake from it), and after the same 0.1 s pause the decision comes after. On this machine (2 virtual cores) a
process that idled 0.1 s runs the same work about twice as slowly at first (the worker's work before the body:
1.8 ms back to back, 3.7-4.0 ms after a 0.1 s sleep, in one process), so only the floor after the pause is
measured as the decision is. The ratios are ReviewHub's p50 over each floor's. It then lists the statements the
worker runs before the tool body (in this process) and why each must stay.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import DEFAULT_DB, setup_django  # noqa: E402
from bench.peers.walbytes import latency  # noqa: E402

QUEUE = "bench-resume"
TRACE = "--trace" in sys.argv
SETTLE = 0.1  # seconds between a proposal and its decision (see sample()); --settle


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--histories", type=int, nargs="+", default=[2, 50, 200])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--trace", action="store_true", help="print when each task started, between the two")
    parser.add_argument(
        "--settle", type=float, default=SETTLE, help="seconds between a proposal and its decision (0: at once)"
    )
    return parser.parse_args()


def start_worker(args, model_url: str) -> subprocess.Popen:
    env = os.environ | {
        "DATABASE_URL": args.database_url,
        "REDIS_URL": args.redis_url,
        "CELERY_QUEUE": QUEUE,
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "",
    }
    if args.trace:
        env["BENCH_RESUME_TRACE"] = "1"
    env.pop("REVIEWHUB_RESUME", None)
    queues = f"{QUEUE},{QUEUE}-turns,{QUEUE}-tools"
    command = [sys.executable, "-m", "celery", "-A", "reviewhub", "worker", "-Q", queues, "-c", "2"]
    command += ["--pool", "threads", "-l", "warning", "--include", "bench.resume_tool"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return subprocess.Popen(command, cwd=ROOT, env=env)


def waiting_run(history: int, reviewer):
    """A run with `history` transcript messages whose last step is one bench_mark call waiting for review."""
    from approvals import services
    from approvals.models import Message, Run, ToolCall

    run = Run.objects.create(agent="orders", request="Note the time.", max_steps=3)
    roles = [Message.Role.USER, Message.Role.ASSISTANT]
    Message.objects.bulk_create(
        Message(run=run, seq=i, role=roles[i % 2], content=f"message {i} " + "x" * 200) for i in range(history - 1)
    )
    call = services.ProposedCall(call_id="call_mark", name="bench_mark", raw_arguments='{"n": 1}')
    services.step_record(run=run, content="Noting the time.", calls=[call])
    return run, ToolCall.objects.get(run=run)


def sample(history: int, reviewer, redis_client) -> float:
    from django.db import transaction

    from approvals import services
    from approvals.models import Run

    run, call = waiting_run(history, reviewer)
    # Nobody decides within milliseconds of a proposal: its notification task (ops/tasks.call_waiting) has run on the
    # worker by then. Deciding at once timed the resumption against that task on the worker's other thread.
    time.sleep(SETTLE)
    key = f"bench-resume-{run.pk}"
    redis_client.delete(key, f"bench-task-{run.pk}")  # left by an earlier run on another database, say
    committed: list[float] = []
    with transaction.atomic():
        transaction.on_commit(lambda: committed.append(time.time()))
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    deadline = time.monotonic() + 30
    while (started := redis_client.get(key)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"the tool body of run {run.pk} did not start within 30 s: is the worker up?")
        time.sleep(0.001)
    while Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # let the worker finish the run before the next sample
    task = redis_client.get(f"bench-task-{run.pk}")
    if TRACE and task is not None:
        print(
            f"    history {history}: task starts {(float(task) - committed[0]) * 1000:.1f} ms after the commit, "
            f"tool body {(float(started) - float(task)) * 1000:.1f} ms after that"
        )
    return (float(started) - committed[0]) * 1000


def bare_sample(redis_client) -> float:
    """Publish → body of a task that does nothing but note the time: the broker's and Celery's hop alone."""
    from django.conf import settings

    from bench.resume_tool import bare_mark

    key = f"bench-bare-{uuid.uuid4().hex}"
    published = time.time()
    bare_mark.apply_async((key,), queue=settings.TOOLS_QUEUE)
    deadline = time.monotonic() + 30
    while (started := redis_client.get(key)) is None:
        if time.monotonic() > deadline:
            raise SystemExit("the bare task did not start within 30 s: is the worker up?")
        time.sleep(0.001)
    return (float(started) - published) * 1000


def commit_sample(run_id: int) -> float:
    """One row changed and committed, as a decision's transaction must at least do."""
    from django.db import connection, transaction

    began = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE approvals_run SET updated_at = now() WHERE id = %s", [run_id])
    return (time.perf_counter() - began) * 1000


def in_turns(histories: list[int], samples: int, reviewer, client) -> dict:
    """ReviewHub's resumption, then the floor twice, one of each in turn: the bare hop and a one-row commit at once
    (the worker and PostgreSQL still busy with the sample before), and each again after the same pause as the
    decision's (SETTLE: the worker, PostgreSQL and their CPUs idle, as they are when a person decides)."""
    from approvals.models import Run

    floor_run = Run.objects.create(agent="orders", request="The floor's one row.", status=Run.Status.COMPLETED)
    floors = ("bare", "commit", "bare_paused", "commit_paused")
    results: dict[str, list[float]] = {str(h): [] for h in histories} | {name: [] for name in floors}
    for history in histories:
        for _ in range(samples):
            results[str(history)].append(sample(history, reviewer, client))
            results["bare"].append(bare_sample(client))
            results["commit"].append(commit_sample(floor_run.pk))
            time.sleep(SETTLE)
            results["bare_paused"].append(bare_sample(client))
            time.sleep(SETTLE)
            results["commit_paused"].append(commit_sample(floor_run.pk))
    figures = {name: latency(values) for name, values in results.items()}
    for suffix in ("", "_paused"):
        floor = figures["bare" + suffix]["p50_ms"] + figures["commit" + suffix]["p50_ms"]
        figures[f"floor{suffix}_p50_ms"] = floor
        figures[f"ratio{suffix}_p50"] = {str(h): figures[str(h)]["p50_ms"] / floor for h in histories}
    return figures


def main():
    global SETTLE
    args = parse_args()
    SETTLE = args.settle
    os.environ["REDIS_URL"] = args.redis_url
    os.environ["REVIEWHUB_RESUME"] = "agents.dispatch.enqueue_advance"
    os.environ["CELERY_QUEUE"] = QUEUE
    setup_django(args.database_url)
    import redis

    import bench.resume_tool  # noqa: F401 (registers bench_mark here too, for the gate)
    from agents import model_server
    from shop.demo_data import seed_users

    server = model_server.serve()
    reviewer = seed_users()["reviewer"]
    worker = start_worker(args, server.url)
    client = redis.Redis.from_url(args.redis_url)
    try:
        for _ in range(5):
            sample(2, reviewer, client), bare_sample(client)  # warm the worker up
        results = in_turns(args.histories, args.samples, reviewer, client)
        results["before_the_body"] = statements_before_the_body(reviewer)
    finally:
        worker.terminate()
        worker.wait(30)
        server.shutdown()
    if args.json:
        print(json.dumps(results))
        return
    report(results, args.histories)


def report(results: dict, histories: list[int]) -> None:
    print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for suffix, when in (("", "at once"), ("_paused", f"after the decision's {SETTLE} s pause")):
        bare, commit = results["bare" + suffix], results["commit" + suffix]
        hop = f"p50 {bare['p50_ms']:.2f} ms, p99 {bare['p99_ms']:.2f} ms"
        print(f"floor {when}: bare Celery task, publish → body, {hop};")
        print(f"  one-row commit p50 {commit['p50_ms']:.2f} ms; floor p50 {results[f'floor{suffix}_p50_ms']:.2f} ms")
    print("decision committed → tool body starts, warm Celery worker (threads pool, Redis), in turns with the floor")
    for history in map(str, histories):
        figures = results[history]
        print(
            f"  history {history:>4}: p50 {figures['p50_ms']:.2f} ms, p99 {figures['p99_ms']:.2f} ms"
            f" ({figures['n']} samples): {results['ratio_p50'][history]:.2f}× the floor at once,"
            f" {results['ratio_paused_p50'][history]:.2f}× the floor after the pause"
        )
    print("statements the worker runs before the tool body, and why each stays:")
    for sql, why in results["before_the_body"]:
        print(f"  {sql[:60]}…\n      {why}")


WHY = [
    (
        'FROM "approvals_toolcall"',
        "the approved call with its run, the policy's stamp, its decisions and the practice check, one read by SQL "
        "built once per process (services/runnable.py): same tool and arguments as approved (the final decision's "
        "argument hash), policy evaluated again, approvals counted again if policy changed, a practice call never runs",
    ),
    (
        "WITH guard AS (UPDATE",
        "the claim (exactly one worker, under a lease) and its executing event in the trail "
        "before the body, one statement",
    ),
]


def statements_before_the_body(reviewer) -> list[tuple[str, str]]:
    """One resumption in this process, as the worker runs it: each statement before the tool body, and why."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, override_settings

    from agents import loop
    from approvals import services

    run, call = waiting_run(2, reviewer)
    with override_settings(REVIEWHUB_RESUME="bench.common.resume_nothing"):  # resumed here, not by the worker
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    with CaptureQueriesContext(connection) as queries:
        loop._run_approved_first(run.pk)
    before = []  # the worker's kept connection is checked without a statement (runtime/connections.py)
    for query in queries.captured_queries:
        sql = " ".join(query["sql"].split())
        before.append((sql, next((why for key, why in WHY if key in sql), "the tool's own facts, fetched again")))
        if sql.startswith("WITH guard AS (UPDATE"):
            return before
    return before


if __name__ == "__main__":
    main()
