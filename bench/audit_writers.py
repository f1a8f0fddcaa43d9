"""Audit events per second with 1, 8 and 32 concurrent writers, each transaction doing 2 ms of other work.

    .venv/bin/python bench/audit_writers.py
    .venv/bin/python bench/audit_writers.py --writers 1 8 16 32 --seconds 5

Each writer is a thread with its own connection and its own run (as agents and
reviewers acting on different runs are), looping: begin, 2 ms of other work,
record one event, commit.
"""

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DEFAULT_DB, setup_django  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--work-ms", type=float, default=2.0)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def writer(run_id: int, stop: threading.Event, counts: list[int], slot: int, work: float, start: threading.Barrier):
    from django.db import connection, transaction

    from approvals import audit
    from approvals.models import Run

    run = Run.objects.get(pk=run_id)
    start.wait()
    try:
        while not stop.is_set():
            with transaction.atomic():
                time.sleep(work)
                audit.record("resumed", run=run, payload={"n": counts[slot]})
            counts[slot] += 1
    finally:
        connection.close()


def measure(writers: int, seconds: float, work_ms: float) -> float:
    from approvals import services

    runs = [services.run_create(agent="support", request=f"writer {i}").pk for i in range(writers)]
    counts, stop = [0] * writers, threading.Event()
    start = threading.Barrier(writers + 1)
    threads = [
        threading.Thread(target=writer, args=(runs[i], stop, counts, i, work_ms / 1000, start)) for i in range(writers)
    ]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


def main():
    args = parse_args()
    setup_django(args.database_url)
    results = {str(n): measure(n, args.seconds, args.work_ms) for n in args.writers}
    if args.json:
        print(json.dumps(results))
        return
    base = results[str(args.writers[0])]
    for n, rate in results.items():
        print(f"  {n:>3} writers: {rate:7.0f} audit events/s ({rate / base:.1f}x)")


if __name__ == "__main__":
    main()
