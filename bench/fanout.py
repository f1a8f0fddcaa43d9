"""Fan-out benchmark: how fast a proposed call reaches every reviewer's queue.

N WebSocket clients (logged-in reviewers) connect to a real ASGI server (uvicorn)
on the Redis channel layer and PostgreSQL; this script proposes M calls through
the gate, as a worker does, and measures for every client the time from the
proposal's commit to the client's receipt of the rendered push.

Each phase starts with a few unmeasured proposals (the server's first push
after a start or after new reviewers connect also loads templates and users).
Two phases per N: "paced" proposes one call every --interval seconds (latency
of a single push); "burst" proposes M calls back to back (throughput, and the
latency when pushes queue up). Pushes per second = pushes received / time from
the first commit to the last receipt.

    .venv/bin/python bench/fanout.py                    # N = 1, 10, 100, one reviewer per client
    .venv/bin/python bench/fanout.py --clients 100 --users 10

Needs PostgreSQL and Redis: DATABASE_URL (default: a reviewhub_bench database on
127.0.0.1:5432, created if missing) and REDIS_URL (default redis://127.0.0.1:6379/0).
The database's bench users, runs and calls are left in place for inspection.
"""

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import ensure_database  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10, 100], help="values of N")
    parser.add_argument("--users", type=int, default=0, help="distinct reviewers (default: one per client)")
    parser.add_argument("--calls", type=int, default=40, help="calls proposed per phase (M)")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between paced proposals")
    parser.add_argument(
        "--database-url", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reviewhub_bench")
    )
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--port", type=int, default=0, help="port for the ASGI server (default: a free one)")
    parser.add_argument("--no-deflate", action="store_true", help="serve without per-message compression")
    parser.add_argument("--per-call", action="store_true", help="also print each call's first and last receipt")
    return parser.parse_args()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_django(args) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "reviewhub.settings"
    # A local tool: any key will do, shared with the server it starts (sessions are made here).
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["REDIS_URL"] = args.redis_url
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def make_users(count: int):
    """Reviewers bench-0..count-1 and a requester, with one session cookie per reviewer."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from shop import demo_data

    demo_data.seed_shop()
    demo_data.setup_roles()
    User = get_user_model()
    reviewers = Group.objects.get(name="reviewers")
    cookies = []
    for i in range(count):
        user, _ = User.objects.get_or_create(username=f"bench-{i}")
        user.groups.add(reviewers)
        client = Client()
        client.force_login(user)
        cookies.append(f"sessionid={client.cookies['sessionid'].value}")
    requester, _ = User.objects.get_or_create(username="bench-requester")
    return cookies, requester


def start_server(args, port: int) -> subprocess.Popen:
    env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING"}
    if settings := getattr(args, "settings", None):  # agents_fleet.py --floor: bench.floor.settings
        env["DJANGO_SETTINGS_MODULE"] = settings
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "reviewhub.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--lifespan",
            "off",
            *(["--ws-per-message-deflate", "false"] if args.no_deflate else []),
            *(["--workers", str(args.workers)] if getattr(args, "workers", 1) > 1 else []),
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the ASGI server did not start")


class Proposer:
    """Proposes calls through the gate in a thread, as a Celery worker would."""

    def __init__(self, requester):
        from approvals import services
        from approvals.models import Message, Run

        self.services = services
        self.run = Run.objects.create(agent="support", request="Benchmark", requested_by=requester)
        services.message_append(run=self.run, role=Message.Role.USER, content="Benchmark")
        self.sequence = 0

    def propose(self) -> tuple[int, float]:
        from django.db import transaction

        from approvals.services import ProposedCall

        self.sequence += 1
        committed = {}
        arguments = json.dumps({"order_id": "A-1002", "amount": 35, "reason": f"Benchmark {self.sequence}"})
        with transaction.atomic():
            transaction.on_commit(
                lambda: committed.setdefault("at", time.perf_counter())
            )  # runs before the push is sent
            message = self.services.step_record(
                run=self.run,
                content="I'll refund.",
                calls=[ProposedCall(f"bench_{time.time_ns()}", "issue_refund", arguments)],
            )
        return message.calls.get().pk, committed["at"]

    def clear(self) -> None:
        from approvals.models import ToolCall

        ToolCall.objects.filter(status=ToolCall.Status.PENDING).update(status=ToolCall.Status.CANCELLED)


async def _open_sockets(url: str, origin: str, cookies: list[str], clients: int) -> list:
    from websockets.asyncio.client import connect

    options = {"origin": origin, "proxy": None, "ping_interval": None, "max_size": None}
    return [
        await connect(url, additional_headers={"Cookie": cookies[i % len(cookies)]}, **options) for i in range(clients)
    ]


async def _listen(ws, receipts: list[tuple[int, float]]) -> None:
    async for raw in ws:
        pending = PENDING_CALL.search(raw)  # a push is HTML: the count, the call's row, a toast
        if pending:
            receipts.append((int(pending[1]), time.perf_counter()))
            SIZES.append(len(raw.encode()))


def _propose_all(proposer: Proposer, calls: int, interval: float) -> dict[int, float]:
    commits = {}
    for _ in range(calls):
        call_id, at = proposer.propose()
        commits[call_id] = at
        if interval:
            time.sleep(interval)
    return commits


def _print_per_call(receipts, commits) -> None:
    by_call = {}
    for call_id, at in receipts:
        by_call.setdefault(call_id, []).append((at - commits[call_id]) * 1000)
    for call_id in sorted(by_call):
        print(f"  call {call_id}: first client {min(by_call[call_id]):.1f} ms, last {max(by_call[call_id]):.1f} ms")


async def phase(
    url: str, origin: str, cookies: list[str], clients: int, proposer: Proposer, calls: int, interval: float
):
    receipts: list[tuple[int, float]] = []
    sockets = await _open_sockets(url, origin, cookies, clients)
    listeners = [asyncio.create_task(_listen(ws, receipts)) for ws in sockets]
    # Warm up (not measured): the server's first push after a start, or after new
    # reviewers connect, also loads templates and users.
    for _ in range(WARM_UP):
        await asyncio.to_thread(proposer.propose)
        await asyncio.sleep(0.2)
    receipts.clear()
    commits = await asyncio.to_thread(_propose_all, proposer, calls, interval)
    expected = calls * clients
    deadline = time.monotonic() + 30
    while len(receipts) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for ws in sockets:
        await ws.close()
    for task in listeners:
        task.cancel()
    await asyncio.to_thread(proposer.clear)
    receipts = [(call_id, at) for call_id, at in receipts if call_id in commits]  # not late warm-up ones
    if PER_CALL:
        _print_per_call(receipts, commits)
    latencies = sorted((at - commits[call_id]) * 1000 for call_id, at in receipts)
    span = max(at for _, at in receipts) - min(commits.values()) if receipts else 0
    return latencies, len(receipts), expected, span


WARM_UP = 3
PER_CALL = False
SIZES: list[int] = []  # bytes of each push received (before the socket's deflate)
# A pending call's push: its row in the queue's list (or, before the list, its whole card).
PENDING_CALL = re.compile(
    r'(?:<li class="qrow[^"]*" id="row-\d+"|<article class="call [^"]*" id="call-\d+")'
    r' data-call-id="(\d+)"\s+data-pending="1"'
)


def percentile(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def print_header(redis_url: str) -> None:
    load = os.getloadavg()
    print(
        f"ASGI: 1 uvicorn process on Redis ({redis_url}); {os.cpu_count()} CPUs;"
        f" load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"{'phase':<6} {'N':>4} {'users':>5} {'M':>4} | {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'max ms':>7}"
        f" | {'pushes/s':>9} {'received':>9} {'bytes':>6}"
    )


def run_phase(
    *,
    name: str,
    port: int,
    cookies: list[str],
    clients: int,
    users: int,
    proposer: Proposer,
    calls: int,
    interval: float,
) -> None:
    """One phase with N = clients, printed as one row of the table."""
    latencies, received, expected, span = asyncio.run(
        phase(
            f"ws://127.0.0.1:{port}/ws/queue/",
            f"http://127.0.0.1:{port}",
            cookies[: max(1, min(users, clients))],
            clients,
            proposer,
            calls,
            interval,
        )
    )
    rate = received / span if span else 0
    size = sum(SIZES) / len(SIZES) if SIZES else 0
    SIZES.clear()
    print(
        f"{name:<6} {clients:>4} {min(users, clients):>5} {calls:>4} | "
        f"{percentile(latencies, 50):7.1f} {percentile(latencies, 95):7.1f} "
        f"{percentile(latencies, 99):7.1f} "
        f"{max(latencies, default=float('nan')):7.1f} | "
        f"{rate:9.0f} {received:>4}/{expected:<4} {size:6.0f}",
        flush=True,
    )


def main() -> None:
    args = parse_args()
    global PER_CALL
    PER_CALL = args.per_call
    ensure_database(args.database_url)
    setup_django(args)
    users = args.users or max(args.clients)
    cookies, requester = make_users(users)
    port = args.port or free_port()
    server = start_server(args, port)
    try:
        proposer = Proposer(requester)
        proposer.clear()
        print_header(args.redis_url)
        for clients in args.clients:
            for name, interval in (("paced", args.interval), ("burst", 0.0)):
                run_phase(
                    name=name,
                    port=port,
                    cookies=cookies,
                    clients=clients,
                    users=users,
                    proposer=proposer,
                    calls=args.calls,
                    interval=interval,
                )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
