"""Agents waiting: 100 remote agents on long-polls and webhooks while a reviewer decides their calls.

Production-like: PostgreSQL, Redis (channel layer, Celery broker, long-poll wake-ups), two uvicorn
processes (--workers), one Celery worker (threads pool) for the webhook deliveries. One agent identity and token per
agent (not one agent with many threads), each with its own `issue_refund` declaration (tier approval).
Every agent proposes one call over HTTP, then long-polls `GET /api/v1/calls/{id}?wait=60`; every other
agent (or all, --webhooks all) also has a webhook on a receiver in this process that records arrivals.
One reviewer's queue WebSocket records when each new call's push arrives. Once all are proposed, a
decider approves the calls one by one through the reviewer's service (`toolcall_decide`), time-stamping
each commit. Printed (ms, p50/p95/p99/max, count/expected):

  proposal response → the call's push in the reviewer's queue (negative: the push came first)
  decision commit → the long-poll returns
  decision commit → the webhook is delivered (received by the agent's endpoint)

A proposal answered 503 with Retry-After (the API's answer when PostgreSQL refuses a connection) is sent again as
reviewhub_client does (after Retry-After and up to half as long again); its "request sent" is the first send's.
How often, and the waits asked, are printed.

    .venv/bin/python bench/agents_waiting.py                 # 100 agents, half with webhooks
    .venv/bin/python bench/agents_waiting.py --agents 100 --webhooks all --interval 0.05

All clocks are this process's (the receiver, the sockets and the decider run here). A short unmeasured
warm-up round comes first. DATABASE_URL (default a `reviewhub_bench_agents` database, created if missing),
REDIS_URL (default Redis database 0).
"""

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewhub_client import _api as client_api  # noqa: E402

from bench.common import percentile, setup_django  # noqa: E402
from bench.fanout import PENDING_CALL, free_port, start_server  # noqa: E402

STAGGER = 0.0  # set from --stagger, for the report
QUEUE = "bench-agents"  # a Celery queue of our own: no other worker on the same Redis takes these tasks
TOOL = {
    "description": "Refund money to the customer of an order.",
    "input_schema": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
        "additionalProperties": False,
    },
    "tier": "approval",
    "description_template": "Refund ${amount} on order {order_id}",
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--webhooks", choices=["half", "all"], default="half")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between two decisions")
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between two agents' proposals")
    parser.add_argument("--warm-up", type=int, default=5, help="agents in the unmeasured first round")
    stack_arguments(parser)
    return parser.parse_args()


def stack_arguments(parser) -> None:
    """What stack_up() reads: uvicorn's worker processes, the database and Redis. This bench's and agents_fleet.py's."""
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes (the README's default)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reviewhub_bench_agents"),
    )
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


class Receiver:
    """The agents' webhook endpoint: records when each call's event arrives (and how often)."""

    def __init__(self):
        self.arrivals: dict[int, list[float]] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                at = time.perf_counter()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                call_id = json.loads(body)["data"]["id"]
                receiver.arrivals.setdefault(call_id, []).append(at)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def start_worker() -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "reviewhub", "worker", "-Q", QUEUE, "-c", "4"]
    command += ["--pool", "threads", "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return subprocess.Popen(command, cwd=ROOT, env=dict(os.environ))


def make_people(count: int) -> tuple[object, str, list[str]]:
    """The reviewer, the reviewer's session cookie, and one fresh token per agent (bench-agent-N)."""
    from django.test import Client

    from remote.services import agent_get_or_create
    from remote.tokens import token_create
    from shop.demo_data import seed_users

    reviewer = seed_users()["reviewer"]
    client = Client()
    client.force_login(reviewer)
    tokens = [token_create(agent=agent_get_or_create(name=f"bench-agent-{i}")[0])[1] for i in range(count)]
    return reviewer, f"sessionid={client.cookies['sessionid'].value}", tokens


async def prepare_agents(http, tokens: list[str], hook_url: str, hooked: int) -> None:
    """Declare the tool for every agent; register the receiver for the first `hooked` (once per agent)."""
    from remote.models import Webhook

    for i, token in enumerate(tokens):
        headers = {"Authorization": f"Bearer {token}"}
        answer = await http.put("/api/v1/tools/issue_refund", json=TOOL, headers=headers)
        answer.raise_for_status()
        name = f"bench-agent-{i}"
        has = await Webhook.objects.filter(agent__name=name, url=hook_url, active=True).aexists()
        await Webhook.objects.filter(agent__name=name).exclude(url=hook_url).aupdate(active=False)
        if i < hooked and not has:
            (await http.post("/api/v1/webhooks", json={"url": hook_url}, headers=headers)).raise_for_status()
        if i >= hooked:
            await Webhook.objects.filter(agent__name=name).aupdate(active=False)


class Round:
    """One round's time stamps, all from time.perf_counter()."""

    def __init__(self):
        self.sent: dict[int, float] = {}  # call id → proposal request sent
        self.answered: dict[int, float] = {}  # call id → proposal response received
        self.pushed: dict[int, float] = {}  # call id → first push of it in the reviewer's queue
        self.committed: dict[int, float] = {}  # call id → decision committed
        self.committed_wall: dict[int, float] = {}  # the same, time.time(), to compare with the database's
        self.returned: dict[int, float] = {}  # call id → long-poll returned with a decision
        self.hooked: set[int] = set()  # calls of agents with a webhook
        self.polls_lost: list[str] = []
        self.turned_away: list[float] = []  # Retry-After of each proposal answered 503 with one


async def agent(http, token: str, tag: str, rnd: Round, hooked: bool, delay: float) -> None:
    """Propose one call, then long-poll until it is decided (asking again if the wait runs out)."""
    await asyncio.sleep(delay)
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "thread_id": f"bench-{tag}",
        "tool": "issue_refund",
        "arguments": {"order_id": "A-1001", "amount": 49},
        "idempotency_key": f"bench-{tag}",
    }
    sent = time.perf_counter()
    answer = await propose_until_let_in(http, body, headers, rnd.turned_away)
    answered = time.perf_counter()
    if answer.status_code != 201:
        rnd.polls_lost.append(f"{tag}: proposal {answer.status_code} {answer.text[:200]}")
        return
    call_id = answer.json()["id"]
    rnd.sent[call_id], rnd.answered[call_id] = sent, answered
    if hooked:
        rnd.hooked.add(call_id)
    for _ in range(3):
        poll = await http.get(f"/api/v1/calls/{call_id}", params={"wait": 60}, headers=headers)
        if poll.status_code == 200 and poll.json()["status"] != "pending":
            rnd.returned[call_id] = time.perf_counter()
            return
    rnd.polls_lost.append(f"{tag}: call {call_id} still pending after three waits")


async def propose_until_let_in(http, body: dict, headers: dict, turned_away: list):
    """POST the proposal; turned away (503 with Retry-After), wait as reviewhub_client does and send it again.
    Each time turned away is appended to `turned_away`. The answer."""
    while True:
        answer = await http.post("/api/v1/calls", json=body, headers=headers)
        if (seconds := client_api.retry_after(answer)) is None:
            return answer
        turned_away.append(seconds)
        await asyncio.sleep(client_api.busy_wait(seconds))


async def watch_queue(port: int, cookie: str, rnd: Round, ready: asyncio.Event) -> None:
    from websockets.asyncio.client import connect

    options = {"origin": f"http://127.0.0.1:{port}", "proxy": None, "ping_interval": None, "max_size": None}
    async with connect(f"ws://127.0.0.1:{port}/ws/queue/", additional_headers={"Cookie": cookie}, **options) as ws:
        ready.set()
        async for raw in ws:
            at = time.perf_counter()
            for match in PENDING_CALL.finditer(raw):
                rnd.pushed.setdefault(int(match[1]), at)


def stamp(rnd: Round, call_id: int) -> None:
    rnd.committed[call_id], rnd.committed_wall[call_id] = time.perf_counter(), time.time()


def decide_all(reviewer, call_ids: list[int], interval: float, rnd: Round) -> None:
    """Approve each call as the reviewer, one by one, stamping each commit (before its on-commit work)."""
    from django.db import connection, transaction

    from approvals import services
    from approvals.models import ToolCall

    try:
        for call_id in call_ids:
            call = ToolCall.objects.get(pk=call_id)
            with transaction.atomic():
                transaction.on_commit(lambda call_id=call_id: stamp(rnd, call_id))
                services.toolcall_decide(
                    call_id=call_id, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash
                )
            time.sleep(interval)
    finally:
        connection.close()


async def wait_until(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


async def one_round(http, port: int, people, tokens: list[str], *, tag, interval, stagger, receiver, hooked: int):
    """All agents propose and wait; once every call is in the queue, the reviewer approves them one by one."""
    reviewer, cookie, _ = people
    rnd, ready = Round(), asyncio.Event()
    watcher = asyncio.create_task(watch_queue(port, cookie, rnd, ready))
    await asyncio.wait_for(ready.wait(), 30)
    agents = [
        asyncio.create_task(agent(http, token, f"{tag}-{i}", rnd, i < hooked, i * stagger))
        for i, token in enumerate(tokens)
    ]
    await wait_until(lambda: len(rnd.sent) + len(rnd.polls_lost) >= len(tokens), 60)
    await wait_until(lambda: set(rnd.sent) <= set(rnd.pushed), 10)
    await asyncio.sleep(0.5)  # every long-poll is waiting before the first decision
    await asyncio.to_thread(decide_all, reviewer, sorted(rnd.sent), interval, rnd)
    await asyncio.wait_for(asyncio.gather(*agents), 90)
    await wait_until(lambda: rnd.hooked <= set(receiver.arrivals), 30)
    watcher.cancel()
    return rnd


def summary(name: str, values: list[float], expected: int) -> str:
    if not values:
        return f"{name:<44} none of {expected}"
    figures = " ".join(f"{percentile(values, p):8.1f}" for p in (50, 95, 99)) + f" {max(values):8.1f}"
    return f"{name:<44} {figures}   {len(values):>4}/{expected}"


def turned_away_line(turned_away: list[float]) -> str:
    """How often a proposal was turned away (503 with Retry-After) and sent again, and the waits asked."""
    if not turned_away:
        return "turned away (503, Retry-After): none"
    asked = f"Retry-After p50 {percentile(turned_away, 50):.0f} s, max {max(turned_away):.0f} s"
    return f"turned away (503, Retry-After) and sent again: {len(turned_away)} times ({asked})"


def report(rnd: Round, receiver) -> None:
    hooked_calls = rnd.hooked
    calls = sorted(rnd.sent)
    pushes = [(rnd.pushed[c] - rnd.answered[c]) * 1000 for c in calls if c in rnd.pushed]
    since_sent = [(rnd.pushed[c] - rnd.sent[c]) * 1000 for c in calls if c in rnd.pushed]
    polls = [(rnd.returned[c] - rnd.committed[c]) * 1000 for c in calls if c in rnd.returned and c in rnd.committed]
    hooks = [(receiver.arrivals[c][0] - rnd.committed[c]) * 1000 for c in hooked_calls if c in receiver.arrivals]
    load = os.getloadavg()
    print(f"{len(calls)} agents, proposals {STAGGER} s apart; {os.cpu_count()} CPUs;", end=" ")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'':<44} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}   count")
    print(summary("proposal response → queue push", pushes, len(calls)))
    print(summary("proposal request sent → queue push", since_sent, len(calls)))
    print(summary("decision commit → long-poll returns", polls, len(calls)))
    print(summary("decision commit → webhook delivered", hooks, len(hooked_calls)))
    duplicates = sum(len(receiver.arrivals[c]) - 1 for c in hooked_calls if c in receiver.arrivals)
    lost = len(calls) - len(pushes), len(calls) - len(polls), len(hooked_calls) - len(hooks)
    print(f"lost: {lost[0]} pushes, {lost[1]} long-polls, {lost[2]} webhooks; {duplicates} duplicate deliveries")
    print(turned_away_line(rnd.turned_away))
    if polls:
        order = sorted(rnd.committed, key=rnd.committed.get)
        timed = [c for c in calls if c in rnd.returned and c in rnd.committed]
        slowest = max(timed, key=lambda c: rnd.returned[c] - rnd.committed[c])
        print(f"slowest long-poll: decision {order.index(slowest) + 1} of {len(order)}")
    for line in rnd.polls_lost:
        print("  " + line)
    webhook_path(rnd, receiver)


def webhook_path(rnd: Round, receiver) -> None:
    """Medians of the webhook's legs: the decider's on-commit work, the broker and worker, the POST."""
    from remote.models import WebhookDelivery

    legs: dict[str, list[float]] = {"commit → delivery row": [], "row → attempt starts": [], "attempt → arrival": []}
    for row in WebhookDelivery.objects.filter(tool_call_id__in=rnd.hooked, last_attempt_at__isnull=False):
        call_id, committed = row.tool_call_id, rnd.committed_wall.get(row.tool_call_id)
        if committed is None or call_id not in receiver.arrivals:
            continue
        arrived = committed + receiver.arrivals[call_id][0] - rnd.committed[call_id]
        legs["commit → delivery row"].append((row.created_at.timestamp() - committed) * 1000)
        legs["row → attempt starts"].append((row.last_attempt_at.timestamp() - row.created_at.timestamp()) * 1000)
        legs["attempt → arrival"].append((arrived - row.last_attempt_at.timestamp()) * 1000)
    print(
        "webhook legs (p50 / p99 ms): "
        + "; ".join(
            f"{name} {percentile(values, 50):.0f} / {percentile(values, 99):.0f}"
            for name, values in legs.items()
            if values
        )
    )


async def run_all(args, port: int, people, receiver) -> Round:
    import httpx

    tokens = people[2]
    hooked = len(tokens) if args.webhooks == "all" else len(tokens) // 2
    limits = httpx.Limits(max_connections=len(tokens) * 2, max_keepalive_connections=len(tokens) * 2)
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=90, trust_env=False) as http:
        await prepare_agents(http, tokens, receiver.url, hooked)
        stamp = time.strftime("%H%M%S")
        warm = tokens[: args.warm_up]
        options = {"interval": args.interval, "stagger": args.stagger, "receiver": receiver}
        await one_round(http, port, people, warm, tag=f"{stamp}-warm", hooked=len(warm), **options)
        receiver.arrivals.clear()
        gc.collect()
        gc.freeze()  # as reviewhub/asgi.py does: the decider stands for a reviewer's request in an ASGI process
        return await one_round(http, port, people, tokens, tag=stamp, hooked=hooked, **options)


def stack_up(args) -> tuple:
    """Django on the bench database (no call left pending), the reviewer and the agents' tokens, the webhook
    receiver, the uvicorn processes and the Celery worker: (people, receiver, port, server, worker). This bench's
    and agents_fleet.py's."""
    environ = {"REDIS_URL": args.redis_url, "CELERY_QUEUE": QUEUE, "REVIEWHUB_WEBHOOK_ALLOW_PRIVATE": "1"}
    os.environ.pop("REVIEWHUB_RESUME", None)
    setup_django(args.database_url, **environ, REVIEWHUB_TASKS_IN_PROCESS="0")
    from approvals.models import ToolCall

    ToolCall.objects.filter(status=ToolCall.Status.PENDING).update(status=ToolCall.Status.CANCELLED)
    people = make_people(args.agents)
    port = free_port()
    settings = None
    if getattr(args, "floor", False):  # agents_fleet.py --floor: the uvicorn workers only; Celery keeps ReviewHub's
        from bench.floor.views import ensure_table

        ensure_table()
        settings = "bench.floor.settings"
    server = start_server(argparse.Namespace(no_deflate=False, workers=args.workers, settings=settings), port)
    return people, Receiver(), port, server, start_worker()


def main() -> None:
    args = parse_args()
    global STAGGER
    STAGGER = args.stagger
    people, receiver, port, server, worker = stack_up(args)
    try:
        rnd = asyncio.run(run_all(args, port, people, receiver))
    finally:
        server.terminate()
        worker.terminate()
        server.wait(timeout=10)
        worker.wait(timeout=30)
    report(rnd, receiver)


if __name__ == "__main__":
    main()
