"""PostgreSQL's CPU and WAL for one audit event, the same statement on two databases in turns.

    .venv/bin/python bench/audit_event_cost.py --events 2000 --rounds 5 \
        postgres://USER@HOST:5432/BEFORE postgres://USER@HOST:5432/AFTER

For comparing two schemas of the event table (its indexes, say) with nothing else changed: the write path's
one-event statement (approvals/audit/store.py, prepared and its values bound on the server as
approvals/lib/prepared.py does, one transaction per event) runs on each database in
turn, from one process, on runs and calls picked at random from a seeded trail (bench/seed.py), half the
events naming a call (`decided`), half only their run (`resumed`), as a busy system's are spread over many
runs. Reported per event: the PostgreSQL backend's CPU (/proc/<pid>/schedstat, so the server must be on this
machine), and from EXPLAIN (ANALYZE, WAL) of a further batch, the WAL it wrote and how many full-page images
(the first change to a page after a checkpoint: an index whose entries land on many pages writes more).
The databases must be at the same commit's schema for the statement, and seeded.
"""

import argparse
import json
import os
import random
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import database_and_server

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do

import django

django.setup()

import psycopg  # noqa: E402

from approvals.audit.store import _APPEND_ONE, NO_GUARD  # noqa: E402
from approvals.lib.hashing import canonical_json, event_canonical_around  # noqa: E402

SQL = _APPEND_ONE.format(guard=NO_GUARD[0])


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("databases", nargs="+")
    parser.add_argument("--events", type=int, default=2000, help="events per database per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=500, help="how many of the seeded runs the events go to")
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def backend_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


class Target:
    def __init__(self, url: str, runs: int, rng: random.Random):
        self.url = url
        self.conn = psycopg.connect(url)  # values bound on the server, as approvals/lib/prepared.py
        self.pid = self.conn.execute("select pg_backend_pid()").fetchone()[0]
        calls = self.conn.execute(
            "select c.run_id, c.id from approvals_toolcall c join approvals_audithead h on h.chain = c.run_id"
        ).fetchall()
        self.conn.commit()
        chosen = set(rng.sample(sorted({run for run, _ in calls}), min(runs, len(calls))))
        self.calls = [(run, call) for run, call in calls if run in chosen]
        self.rng = rng

    def values(self, n: int) -> list:
        run, call = self.rng.choice(self.calls)
        kind, call = ("decided", call) if n % 2 else ("resumed", None)
        payload = {"verdict": "approve", "arguments": {"order_id": "A-1001", "amount": 12}} if call else {"n": n}
        payload_json = canonical_json(payload)
        now = datetime.now(UTC)
        before, after = event_canonical_around(
            run_id=run,
            tool_call_id=call,
            kind=kind,
            actor_id=None,
            actor_label="system",
            payload_json=payload_json,
            created_at=now,
        )
        return [run, before, after, run, call, kind, None, "system", payload_json, now, run]

    def events(self, count: int) -> float:
        """Append `count` events, one transaction each: the backend's CPU per event in microseconds."""
        rows = [self.values(n) for n in range(count)]
        began = backend_ns(self.pid)
        for row in rows:
            self.conn.execute(SQL, row, prepare=True)
            self.conn.commit()
        return (backend_ns(self.pid) - began) / count / 1000

    def wal(self, count: int) -> tuple[float, float]:
        """Append `count` more under EXPLAIN (ANALYZE, WAL): WAL bytes and full-page images per event."""
        total = fpi = 0
        for n in range(count):
            row = self.values(n)
            plan = self.conn.execute("EXPLAIN (ANALYZE, WAL, FORMAT JSON) " + SQL, row).fetchone()[0]
            self.conn.commit()
            top = (plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]
            total += top.get("WAL Bytes", 0)
            fpi += top.get("WAL FPI", 0)
        return total / count, fpi / count


def main():
    args = parse_args()
    rng = random.Random(args.seed)
    targets = [Target(url, args.runs, rng) for url in args.databases]
    cpu: dict[str, list[float]] = {t.url: [] for t in targets}
    wal: dict[str, list[tuple[float, float]]] = {t.url: [] for t in targets}
    print(f"began {datetime.now(UTC):%H:%M:%S} UTC, load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for target in targets:
        target.events(200)  # warm: plans, caches
    for _ in range(args.rounds):
        for target in targets:
            cpu[target.url].append(target.events(args.events))
        for target in targets:
            wal[target.url].append(target.wal(max(args.events // 10, 50)))
    print(f"ended {datetime.now(UTC):%H:%M:%S} UTC, load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for target in targets:
        name = database_and_server(target.url)[0]
        figures = " ".join(f"{x:.0f}" for x in cpu[target.url])
        bytes_, fpis = (
            statistics.median(b for b, _ in wal[target.url]),
            statistics.median(f for _, f in wal[target.url]),
        )
        print(
            f"{name}: PostgreSQL CPU per event, median {statistics.median(cpu[target.url]):.0f} us (rounds: {figures});"
            f" WAL per event, median {bytes_:.0f} bytes, {fpis:.2f} full-page images"
        )
        target.conn.close()


if __name__ == "__main__":
    main()
