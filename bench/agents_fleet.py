"""A fleet over a minute: N remote agents, each proposing P calls, paced evenly over S seconds (issue 26).

    .venv/bin/python bench/agents_fleet.py --agents 1000 --proposals 10 --over 60
    .venv/bin/python bench/agents_fleet.py --agents 200 --proposals 5 --over 20 --decide-every 5

The same production-like stack as bench/agents_waiting.py (PostgreSQL, Redis, two uvicorn processes, one
Celery worker for webhook deliveries; one identity and token per agent, half of them with a webhook). The
agents' proposals are spread evenly over the run (agent i's j-th at (j * N + i) / (N * P) of it); after each
proposal the agent long-polls its call until its next proposal is due (at most 60 s). One reviewer's queue
socket records each call's push; a decider approves every Kth call (--decide-every) as soon as its push
arrives, so decision → long-poll and → webhook are measured while the fleet keeps proposing (decision →
long-poll also for only the calls whose GET was sent before the decision: the push, and so the decision, can
come before the agent has its answer). Printed: the three latencies (p50/p95/p99/max), proposals per second
achieved, HTTP answers that were not 2xx by status (and client errors by kind), CPU ms per proposal (uvicorn
workers, PostgreSQL, the whole machine) and each uvicorn worker's RSS at the start, every 10 s and at the end,
each beside the load average.

--wait-for-decisions: an agent whose call the decider will decide long-polls it until it is decided, as an agent
waiting on a review does, even when its next proposal is due: beyond what the machine answers, an answer comes
after the agent's next proposal was due, and without it no agent long-polls at all.

--processes K: the agents in K processes of their own (bench/fleet_processes.py), not all in this process's
event loop, whose lateness is in every time an agent stamps; this process keeps the reviewer's socket, the decider
and the webhook receiver, and the decider approves every Kth pushed call (--decide-every) without waiting for its
agent's answer.

--floor: the same stack, bench and figures, with POST /api/v1/calls and GET /api/v1/calls/{id} served by bare
Django views in the uvicorn workers (bench/floor: the token checked, one INSERT; one SELECT, a wait that runs out):
the floor under ReviewHub's rules. Nothing is pushed, decided or delivered there: those figures have no samples.

PostgreSQL's CPU is the server's, every database's: another client of the same server counts too.
"""

import argparse
import asyncio
import collections
import gc
import os
import ssl
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import agents_waiting as waiting  # noqa: E402
from bench import fleet_processes  # noqa: E402
from bench.agents_waiting import TOOL, Round, summary, webhook_path  # noqa: E402
from bench.machine import Machine, postmaster_pid, rss_line, uvicorn_workers  # noqa: E402

# Every agent's client shares one: an httpx client makes an SSL context of its own otherwise, ~15 ms of CPU loading
# the CA certificates (for plain HTTP it never uses), and a thousand of them stopped this process's event loop for
# the run's first 15 s, after which the proposals due meanwhile went out at once.
TLS = ssl.create_default_context()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--proposals", type=int, default=10, help="proposals per agent")
    parser.add_argument("--over", type=float, default=60.0, help="seconds the proposals are spread over")
    parser.add_argument("--decide-every", type=int, default=10, help="the decider approves every Kth call")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument(
        "--wait-for-decisions",
        action="store_true",
        help="an agent long-polls each call the decider will decide until it is decided, even past its next proposal's"
        " time (a fleet beyond what the machine answers sends its next proposal at once otherwise: no long-poll)",
    )
    parser.add_argument("--shared-client", action="store_true", help="one HTTP client (and pool) for all agents")
    parser.add_argument("--floor", action="store_true", help="proposals and reads by bare Django views (bench/floor)")
    parser.add_argument("--processes", type=int, default=1, help="agent processes (bench/fleet_processes.py)")
    waiting.stack_arguments(parser)
    return parser.parse_args()


class Pushes(dict):
    """Call id → its first push; the ids also in the order they came, for a decider not told of the answers."""

    def __init__(self):
        super().__init__()
        self.new: collections.deque[int] = collections.deque()

    def setdefault(self, key, default=None):
        if key not in self:
            self.new.append(key)
        return super().setdefault(key, default)


class Fleet(Round):
    """Round's time stamps, plus what a minute of proposals adds."""

    def __init__(self, decide_every: int, floor: bool = False):
        super().__init__()
        self.pushed = Pushes()
        self.decide_every = decide_every
        self.floor = floor  # the floor's calls are rows of its own: none to decide, push or deliver
        self.statuses: collections.Counter = collections.Counter()  # "proposal 503", "poll 500", "poll ReadTimeout"
        self.to_decide: set[int] = set()
        self.proposed = 0
        self.left: dict[int, float] = {}  # call id → its agent stopped waiting on it (its next proposal was due)
        self.polled: dict[int, float] = {}  # call id → its agent's first long-poll on it sent
        self.lags: list[float] = []  # ms this process's event loop was late waking a sleep of LAG_EVERY
        self.gets = 0  # long-poll GETs sent


async def prepare(http, tokens: list[str], hook_url: str, hooked: int) -> None:
    """Each agent declares its tool; the first `hooked` register the receiver (20 at a time)."""
    from remote.models import Webhook

    limit = asyncio.Semaphore(20)

    async def one(i: int, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with limit:
            (await http.put("/api/v1/tools/issue_refund", json=TOOL, headers=headers)).raise_for_status()
            hooks = Webhook.objects.filter(agent__name=f"bench-agent-{i}")
            await hooks.exclude(url=hook_url).aupdate(active=False)
            if i >= hooked:
                await hooks.aupdate(active=False)
            elif not await hooks.filter(active=True).aexists():
                (await http.post("/api/v1/webhooks", json={"url": hook_url}, headers=headers)).raise_for_status()

    await asyncio.gather(*(one(i, token) for i, token in enumerate(tokens)))


async def agent_with_own_client(base_url: str, *rest) -> None:
    """An agent with its own HTTP client, as an agent in a process of its own has (--shared-client: one for all,
    whose pool of thousands of connections costs this process more CPU at every request)."""
    import httpx

    async with httpx.AsyncClient(base_url=base_url, timeout=90, trust_env=False, verify=TLS) as own:
        await agent(own, *rest)


async def agent(http, i: int, token: str, fleet: Fleet, args, start: float, stamp: str, hooked: bool) -> None:
    """Propose at this agent's paced times; between them, long-poll the last call until the next is due."""
    headers = {"Authorization": f"Bearer {token}"}
    total = args.agents * args.proposals
    due = [start + (j * args.agents + i) / total * args.over for j in range(args.proposals)]
    for j, at in enumerate(due):
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
        body = {
            "thread_id": f"fleet-{stamp}-{i}-{j}",
            "tool": "issue_refund",
            "arguments": {"order_id": "A-1001", "amount": 49},
            "idempotency_key": f"fleet-{stamp}-{i}-{j}",
        }
        call_id = await propose(http, headers, body, fleet, hooked)
        until = due[j + 1] if j + 1 < len(due) else start + args.over + 10
        if call_id is not None and args.wait_for_decisions and call_id in fleet.to_decide:
            until = max(until, time.perf_counter() + 60)  # it waits for this decision, however late its next is
        if call_id is not None:
            await poll(http, headers, call_id, until, fleet)


async def propose(http, headers, body, fleet: Fleet, hooked: bool) -> int | None:
    sent = time.perf_counter()
    try:
        answer = await waiting.propose_until_let_in(http, body, headers, fleet.turned_away)
    except Exception as exc:  # counted, as an agent would retry it
        fleet.statuses[f"proposal {type(exc).__name__}"] += 1
        return None
    if answer.status_code != 201:
        fleet.statuses[f"proposal {answer.status_code}"] += 1
        return None
    call_id = answer.json()["id"]
    fleet.sent[call_id], fleet.answered[call_id] = sent, time.perf_counter()
    fleet.proposed += 1
    if call_id % fleet.decide_every == 0 and not fleet.floor:
        fleet.to_decide.add(call_id)
        if hooked:
            fleet.hooked.add(call_id)
    return call_id


async def poll(http, headers, call_id: int, until: float, fleet: Fleet) -> None:
    while (left := until - time.perf_counter()) > 0.5:
        try:
            wait = {"wait": max(1, min(60, int(left)))}
            fleet.polled.setdefault(call_id, time.perf_counter())
            fleet.gets += 1
            answer = await http.get(f"/api/v1/calls/{call_id}", params=wait, headers=headers)
        except Exception as exc:
            fleet.statuses[f"poll {type(exc).__name__}"] += 1
            return
        if answer.status_code != 200:
            fleet.statuses[f"poll {answer.status_code}"] += 1
            return
        if answer.json()["status"] != "pending":
            fleet.returned[call_id] = time.perf_counter()
            return
    fleet.left[call_id] = time.perf_counter()


def decide_as_pushed(reviewer, fleet: Fleet, done: threading.Event, by_push: bool = False) -> None:
    """Approve each call to decide as soon as its push has arrived, stamping each commit (`by_push`: every Kth
    call pushed, not every Kth answered to an agent of this process)."""
    from django.db import connection, transaction

    from approvals import services
    from approvals.models import ToolCall

    try:
        while not done.is_set() or fleet.to_decide - set(fleet.committed):
            while by_push and fleet.pushed.new:  # --processes: the agents' answers are in their processes
                if (call_id := fleet.pushed.new.popleft()) % fleet.decide_every == 0:
                    fleet.to_decide.add(call_id)
            ready = sorted(c for c in fleet.to_decide - set(fleet.committed) if c in fleet.pushed)
            for call_id in ready:
                call = ToolCall.objects.get(pk=call_id)
                with transaction.atomic():
                    transaction.on_commit(lambda call_id=call_id: waiting.stamp(fleet, call_id))
                    services.toolcall_decide(
                        call_id=call_id, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash
                    )
            time.sleep(0.01)
    finally:
        connection.close()


LAG_EVERY = 0.1


async def watch_lag(fleet: Fleet) -> None:
    """How late this process's event loop wakes a sleep: its time stamps (a long-poll's return) are as late."""
    while True:
        asked = time.perf_counter()
        await asyncio.sleep(LAG_EVERY)
        fleet.lags.append((time.perf_counter() - asked - LAG_EVERY) * 1000)


async def sample_rss(pids: list[int], fleet: Fleet, every: float, lines: list[str], start: float) -> None:
    while True:
        await asyncio.sleep(every)
        lines.append(rss_line(f"{time.perf_counter() - start:.0f} s", pids, max(fleet.proposed, len(fleet.pushed))))


async def run(args, port: int, people, receiver, server_pid: int) -> tuple[Fleet, list[str], Machine, float]:
    import httpx

    reviewer, cookie, tokens = people
    hooked = len(tokens) // 2
    limits = httpx.Limits(max_connections=len(tokens) * 3, max_keepalive_connections=len(tokens) * 3)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=90, trust_env=False
    ) as http:
        await prepare(http, tokens, receiver.url, hooked)
        gc.collect()
        gc.freeze()
        fleet, ready, done = Fleet(args.decide_every, args.floor), asyncio.Event(), threading.Event()
        watcher = asyncio.create_task(waiting.watch_queue(port, cookie, fleet, ready))
        await asyncio.wait_for(ready.wait(), 30)
        pids = uvicorn_workers(server_pid)
        lines = [rss_line("start", pids, 0)]
        machine = Machine(pids, await asyncio.to_thread(postmaster_pid))
        start = time.perf_counter() + (1.0 if args.processes == 1 else 5.0)  # spawned processes take a moment
        sampler = asyncio.create_task(sample_rss(pids, fleet, args.sample_every, lines, start))
        lag = asyncio.create_task(watch_lag(fleet if args.processes == 1 else Fleet(1)))  # else the agents' loops
        by_push = args.processes > 1
        decider = asyncio.create_task(asyncio.to_thread(decide_as_pushed, reviewer, fleet, done, by_push))
        stamp = time.strftime("%H%M%S")
        await run_agents(args, http, tokens, fleet, start, stamp, hooked)
        elapsed = max(fleet.answered.values(), default=start) - start
        machine.stop()
        done.set()
        await asyncio.wait_for(decider, 120)
        await waiting.wait_until(lambda: fleet.hooked & set(fleet.committed) <= set(receiver.arrivals), 30)
        await asyncio.sleep(3)
        lines.append(rss_line("end", pids, fleet.proposed))
        sampler.cancel()
        watcher.cancel()
        lag.cancel()
        return fleet, lines, machine, elapsed


async def run_agents(args, http, tokens: list[str], fleet: Fleet, start: float, stamp: str, hooked: int) -> None:
    if args.processes > 1:
        shares = [
            [(i, t, i < hooked) for i, t in enumerate(tokens) if i % args.processes == k] for k in range(args.processes)
        ]
        await asyncio.to_thread(fleet_processes.run_agents, args, str(http.base_url), shares, start, stamp, fleet)
        return
    if args.shared_client:
        agents = [agent(http, i, token, fleet, args, start, stamp, i < hooked) for i, token in enumerate(tokens)]
    else:
        base = str(http.base_url)
        agents = [
            agent_with_own_client(base, i, t, fleet, args, start, stamp, i < hooked) for i, t in enumerate(tokens)
        ]
    await asyncio.gather(*agents)


def report_asked_and_answered(args, fleet: Fleet, answered: int, elapsed: float) -> int:
    """The run's first lines: what was asked, on what machine, and how much was answered; the proposals asked."""
    wanted = args.agents * args.proposals
    load = os.getloadavg()
    if args.floor:
        print("THE FLOOR (--floor): proposals and reads by bare Django views (bench/floor), not ReviewHub's API")
    print(
        f"{args.agents} agents × {args.proposals} proposals over {args.over:.0f} s ({wanted / args.over:.1f}/s asked);",
        end=" ",
    )
    print(f"{os.cpu_count()} CPUs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"proposals answered 201: {answered} of {wanted}, {answered / elapsed:.1f}/s over {elapsed:.1f} s")
    print(f"not 2xx or no answer: {dict(fleet.statuses) or 'none'}")
    print(waiting.turned_away_line(fleet.turned_away))
    return wanted


def report(args, fleet: Fleet, receiver, lines: list[str], machine: Machine, elapsed: float) -> None:
    calls = sorted(fleet.sent)
    decided = [c for c in calls if c in fleet.committed]
    pushes = [(fleet.pushed[c] - fleet.answered[c]) * 1000 for c in calls if c in fleet.pushed]
    since_sent = [(fleet.pushed[c] - fleet.sent[c]) * 1000 for c in calls if c in fleet.pushed]
    answers = [(fleet.answered[c] - fleet.sent[c]) * 1000 for c in calls]
    waited = [c for c in decided if c in fleet.returned or fleet.left.get(c, 0) > fleet.committed[c]]
    polls = [(fleet.returned[c] - fleet.committed[c]) * 1000 for c in waited if c in fleet.returned]
    # The decider approves as the push arrives, which can be before the agent has its answer and sends its GET.
    sent_before = [c for c in waited if fleet.polled.get(c, float("inf")) < fleet.committed[c]]
    polls_sent_before = [(fleet.returned[c] - fleet.committed[c]) * 1000 for c in sent_before if c in fleet.returned]
    hooked = fleet.hooked & set(decided)
    hooks = [(receiver.arrivals[c][0] - fleet.committed[c]) * 1000 for c in hooked if c in receiver.arrivals]
    wanted = report_asked_and_answered(args, fleet, len(calls), elapsed)
    print(f"{'':<44} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}   count")
    print(summary("proposal request sent → response", answers, wanted))
    print(summary("proposal response → queue push", pushes, len(calls)))
    print(summary("proposal request sent → queue push", since_sent, len(calls)))
    print(summary("decision commit → long-poll returns", polls, len(waited)))
    print(summary("  of these, GET sent before the decision", polls_sent_before, len(sent_before)))
    print(summary("decision commit → webhook delivered", hooks, len(hooked)))
    duplicates = sum(len(receiver.arrivals[c]) - 1 for c in hooked if c in receiver.arrivals)
    lost = len(calls) - len(pushes), len(waited) - len(polls), len(hooked) - len(hooks)
    print(f"lost: {lost[0]} pushes, {lost[1]} long-polls, {lost[2]} webhooks;", end=" ")
    print(f"{duplicates} duplicate deliveries", end=" ")
    print(f"({len(decided)} decided, {len(waited)} of them while their agent still waited)")
    print(machine.per(len(calls), "proposal"))
    print(f"long-poll GETs sent: {fleet.gets}, {fleet.gets / max(len(calls), 1):.2f} per proposal")
    print(summary("this bench's event loop, late by (ms)", fleet.lags, len(fleet.lags)))
    print("\n".join(lines))
    fleet.hooked = hooked
    if not args.floor:
        webhook_path(fleet, receiver)


def main() -> None:
    args = parse_args()
    people, receiver, port, server, worker = waiting.stack_up(args)
    try:
        fleet, lines, machine, elapsed = asyncio.run(run(args, port, people, receiver, server.pid))
    finally:
        server.terminate()
        worker.terminate()
        server.wait(timeout=30)
        worker.wait(timeout=30)
    report(args, fleet, receiver, lines, machine, elapsed)


if __name__ == "__main__":
    main()
