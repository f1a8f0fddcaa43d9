"""What the processes of a production-like stack and the machine spent, read from Linux's /proc: the fleet
bench's CPU per proposal by process (uvicorn workers, PostgreSQL, the bench, the machine) and its RSS samples;
the audit writers' CPU per event."""

import contextlib
import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def process_ticks(pid: int) -> list[int]:
    """utime, stime, cutime, cstime (clock ticks) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [int(value) for value in fields[11:15]]


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def postgres_ticks(postmaster: int) -> int:
    """The server's CPU so far: the postmaster, its reaped backends, and its live ones."""
    live = 0
    for pid in children(postmaster):
        with contextlib.suppress(OSError):  # ended meanwhile: reaped, it counts in the postmaster's cutime next time
            live += sum(process_ticks(pid)[:2])
    return sum(process_ticks(postmaster)) + live


def machine_ticks() -> int:
    user, nice, system, idle, iowait, *rest = (
        int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]
    )
    return user + nice + system + sum(rest[:3])


class Machine:
    """CPU used between its start and stop(): the uvicorn workers, PostgreSQL (the whole server), the machine."""

    def __init__(self, pids: list[int], postmaster: int):
        self.pids, self.postmaster = pids, postmaster
        self.start = self.read()
        self.end = self.start

    def read(self) -> tuple[int, int, int, int]:
        workers = sum(sum(process_ticks(pid)[:2]) for pid in self.pids)
        # The bench: this process, and the agent processes it has ended (bench/fleet_processes.py).
        return workers, postgres_ticks(self.postmaster), sum(process_ticks(os.getpid())), machine_ticks()

    def stop(self) -> None:
        self.end = self.read()

    def per(self, count: int, what: str) -> str:
        web, database, bench, machine = ((b - a) * 1000 / TICK / max(count, 1) for a, b in zip(self.start, self.end))
        return (
            f"CPU ms per {what}: uvicorn workers {web:.1f}, PostgreSQL {database:.1f}, this bench {bench:.1f},"
            f" the machine {machine:.1f}"
        )


def postmaster_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        directory = cursor.fetchone()[0]
    return int(Path(directory, "postmaster.pid").read_text().split()[0])


def uvicorn_workers(server_pid: int) -> list[int]:
    return [pid for pid in children(server_pid) if "resource_tracker" not in cmdline(pid)]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def rss_line(label: str, pids: list[int], proposed: int) -> str:
    sizes = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            sizes.append(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
        except (OSError, StopIteration):
            sizes.append("gone")
    load = os.getloadavg()[0]
    kib = " / ".join(f"{int(size) / 1024:.1f}" if size != "gone" else size for size in sizes)
    return f"  RSS {label:<8} {kib} MiB (workers {', '.join(map(str, pids))}); {proposed} proposed; load {load:.2f}"
