"""WAL and step timing shared by every benchmark, the peers' included (psycopg only: no Django here)."""

import statistics
import time

import psycopg


class Wal:
    """WAL written for one database between two points, read back with pg_walinspect (needs a superuser).

    Only records that touch this database's relations count, so other databases on the
    same server add no noise; commit records (a few dozen bytes each) are left out.
    """

    def __init__(self, database_url: str):
        self.conn = psycopg.connect(database_url, autocommit=True)
        self.conn.execute("create extension if not exists pg_walinspect")
        self.oid = self.conn.execute("select oid from pg_database where datname = current_database()").fetchone()[0]

    def lsn(self) -> str:
        return self.conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]

    def bytes_between(self, start: str, end: str) -> int:
        if start == end:
            return 0
        sql = "select coalesce(sum(record_length), 0) from pg_get_wal_records_info(%s, %s) where block_ref like %s"
        return int(self.conn.execute(sql, [start, end, f"%/{self.oid}/%"]).fetchone()[0])


class Turns:
    """Marks taken at the start of each model turn: the time, and the WAL position."""

    def __init__(self, wal: Wal):
        self.wal, self.times, self.lsns = wal, [], []
        self.first_wal: list[int] = []

    def mark(self) -> None:
        self.times.append(time.perf_counter())
        self.lsns.append(self.wal.lsn())
        if len(self.lsns) == 11:  # read now: a checkpoint may recycle these WAL segments before the run ends
            self.first_wal = self.wal_per_step(self.lsns)

    def wal_per_step(self, lsns: list[str]) -> list[int]:
        return [self.wal.bytes_between(a, b) for a, b in zip(lsns, lsns[1:])]

    def summary(self) -> dict:
        """Figures for the steps between the marks: a step is one model turn and what follows it."""
        times = [(b - a) * 1000 for a, b in zip(self.times, self.times[1:])]
        steps = len(times)
        first, last = self.first_wal or self.wal_per_step(self.lsns[:11]), self.wal_per_step(self.lsns[-11:])
        total = self.times[-1] - self.times[0]
        return {
            "steps": steps,
            "total_s": total,
            "steps_per_s": steps / total,
            "ms_per_step_first10": statistics.median(times[:10]),
            "ms_per_step_last10": statistics.median(times[-10:]),
            "wal_kib_first10": statistics.median(first) / 1024,
            "wal_kib_last10": statistics.median(last) / 1024,
        }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def latency(samples: list[float]) -> dict:
    return {"p50_ms": percentile(samples, 50), "p99_ms": percentile(samples, 99), "n": len(samples)}
