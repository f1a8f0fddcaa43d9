"""Audit events per second with 1, 8 and 32 concurrent writers, each transaction doing 2 ms of other work.

    .venv/bin/python bench/audit_writers.py
    .venv/bin/python bench/audit_writers.py --writers 1 8 16 32 --seconds 5

Each writer is a process with its own connection and its own run (as agents and
reviewers acting on different runs are), looping: begin, 2 ms of other work,
record one event, commit. `--global-lock` also locks one shared row first in each
transaction, the write path before chains were per run, for comparison in the same run.
`--floor` inserts one row into a plain table with one index (its primary key) instead of the
event: the cheapest write transaction, measured the same way. `--beside-floor` measures both, in turns for each
number of writers, and prints an event's CPU as a multiple of the floor's: machines of this kind differ in speed
by 2-3x from one to the next (bench/README.md), so the ratio is what compares across them.
Each writer keeps its connection as a Celery worker and a request slot do (CONN_MAX_AGE, so the event's
statement is prepared once: approvals/audit/store.py); `--not-kept` measures a connection opened per request.
It also prints the CPU time each event costs, the writer's and its PostgreSQL backend's
(read from /proc, so on Linux with the server on the same machine): the machine's cores
divided by that is the most events per second any number of writers can reach here.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DEFAULT_DB, setup_django
from bench.machine import TICK, process_ticks


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--work-ms", type=float, default=2.0)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--global-lock", action="store_true", help="lock one shared row too, as before")
    parser.add_argument("--floor", action="store_true", help="one row into a plain table instead of an event")
    parser.add_argument("--beside-floor", action="store_true", help="the floor too, in turns, and the ratio")
    parser.add_argument("--not-kept", action="store_true", help="the connection as a web request's (not prepared)")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of another process on this machine (Linux /proc)."""
    if pid is None:
        usage = os.times()
        return usage.user + usage.system
    return sum(process_ticks(pid)[:2]) / TICK


FLOOR_TABLE = "CREATE TABLE IF NOT EXISTS bench_floor (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, n bigint)"
FLOOR_INSERT = "INSERT INTO bench_floor (n) VALUES (%s)"


def writer(run_id: int, stop, counts, cpu, slot: int, start, options: argparse.Namespace) -> None:
    from django.conf import settings
    from django.db import connection, transaction

    from approvals import audit
    from approvals.models import AuditHead, Run

    if not options.not_kept:  # kept between transactions, as a worker's (reviewhub/celery.py)
        connection.settings_dict["CONN_MAX_AGE"] = settings.WORKER_CONN_MAX_AGE
    run = Run.objects.get(pk=run_id)
    AuditHead.objects.get_or_create(chain=0)
    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        backend = cursor.fetchone()[0]
    start.wait()
    before = cpu_seconds(), cpu_seconds(backend)
    try:
        while not stop.is_set():
            with transaction.atomic():
                if options.global_lock:
                    AuditHead.objects.select_for_update().get(chain=0)
                time.sleep(options.work_ms / 1000)
                if options.floor:
                    with connection.cursor() as cursor:
                        cursor.execute(FLOOR_INSERT, [counts[slot]])
                else:
                    audit.record("resumed", run=run, payload={"n": counts[slot]})
            counts[slot] += 1
        cpu[2 * slot], cpu[2 * slot + 1] = cpu_seconds() - before[0], cpu_seconds(backend) - before[1]
    finally:
        connection.close()


def measure(writers: int, options: argparse.Namespace) -> dict:
    from django.db import connection, connections

    from approvals import services

    with connection.cursor() as cursor:
        cursor.execute(FLOOR_TABLE)
    runs = [services.run_create(agent="support", request=f"writer {i}").pk for i in range(writers)]
    connections.close_all()  # each process opens its own
    fork = multiprocessing.get_context("fork")
    counts, stop, start = fork.Array("l", writers), fork.Event(), fork.Barrier(writers + 1)
    cpu = fork.Array("d", 2 * writers)  # per writer: its own CPU seconds, its PostgreSQL backend's
    args = (stop, counts, cpu)
    processes = [fork.Process(target=writer, args=(runs[i], *args, i, start, options)) for i in range(writers)]
    for process in processes:
        process.start()
    start.wait()
    began, before = time.perf_counter(), sum(counts)
    time.sleep(options.seconds)
    after, elapsed = sum(counts), time.perf_counter() - began
    stop.set()
    for process in processes:
        process.join()
    total = sum(counts) or 1
    return {
        "events_per_s": (after - before) / elapsed,
        "client_cpu_ms": 1000 * sum(cpu[0::2]) / total,
        "server_cpu_ms": 1000 * sum(cpu[1::2]) / total,
    }


FLOOR_UNITS = ("floor transactions", "transaction")
FLOOR = "one row into a plain table with one index (no event)"


def cpu_ms(figures: dict) -> float:
    return figures["client_cpu_ms"] + figures["server_cpu_ms"]


def main():
    args = parse_args()
    setup_django(args.database_url)
    floors: dict[str, dict] = {}
    results = {}
    for n in args.writers:  # in turns: the machine's minute weighs on both alike
        results[str(n)] = measure(n, args)
        if args.beside_floor:
            floors[str(n)] = measure(n, argparse.Namespace(**{**vars(args), "floor": True}))
    if args.json:
        print(json.dumps({"events": results, "floor": floors} if floors else results))
        return
    if args.floor:
        print(f"the floor: {FLOOR}")
    else:
        print("one shared row locked too (as before)" if args.global_lock else "a lock per run's chain")
        print("  a connection per request: not prepared" if args.not_kept else "  connections kept: prepared once")
    print(f"  load average {' / '.join(f'{load:.1f}' for load in os.getloadavg())}")
    print_figures(results, *(FLOOR_UNITS if args.floor else ("audit events", "event")))
    if floors:
        print(f"the floor, measured after each line above: {FLOOR}")
        print_figures(floors, *FLOOR_UNITS)
        for n in results:
            print(f"  {n:>3} writers: an event costs {cpu_ms(results[n]) / cpu_ms(floors[n]):.2f}x the floor's CPU")


def print_figures(results: dict, what: str, one: str) -> None:
    base = next(iter(results.values()))["events_per_s"]
    cores = os.cpu_count() or 1
    for n, figures in results.items():
        rate, cpu = figures["events_per_s"], cpu_ms(figures)
        print(
            f"  {n:>3} writers: {rate:7.0f} {what}/s ({rate / base:.1f}x); CPU per {one}: writer "
            f"{figures['client_cpu_ms']:.2f} ms + PostgreSQL {figures['server_cpu_ms']:.2f} ms, so {cores} cores "
            f"give at most {1000 * cores / cpu:.0f}/s"
        )


if __name__ == "__main__":
    main()
