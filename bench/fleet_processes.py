"""agents_fleet.py --processes K: the fleet's agents in K processes of their own, as agents that each run in a
process are, instead of a thousand in the bench's one event loop (whose lateness, p99 27-89 ms at 1,000 agents,
is in every time an agent stamps: a long-poll's return, a proposal's answer).

Each process runs its share of the agents (agent i in process i % K) on its own event loop, and sends back what
it stamped. The stamps are time.perf_counter(), Linux's CLOCK_MONOTONIC: one clock for every process of the
machine, so the bench's own stamps (a push, a decision's commit) and the agents' compare as they are. The
bench's process keeps the reviewer's socket, the decider and the webhook receiver. The processes are started by
"spawn" and import no Django: an agent speaks only HTTP.
"""

import asyncio
import multiprocessing

# What a process sends back: the Fleet fields its agents fill (bench/agents_fleet.py), by how they are folded.
UPDATED = ("sent", "answered", "returned", "polled", "left", "to_decide", "hooked")  # dicts of stamps, sets of ids
COUNTS = ("proposed", "gets")
LISTS = ("lags", "turned_away")


def run_agents(args, base_url: str, shares: list[list[tuple[int, str, bool]]], start: float, stamp: str, fleet):
    """Run each share of (index, token, hooked) agents in a process of its own, and fold what each stamped into
    `fleet`. Blocks until every process has ended (run it in a thread)."""
    context = multiprocessing.get_context("spawn")
    pipes, processes = [], []
    for share in shares:
        ours, theirs = context.Pipe(duplex=False)
        process = context.Process(target=_process, args=(args, base_url, share, start, stamp, theirs), daemon=True)
        process.start()
        pipes.append(ours)
        processes.append(process)
    for pipe, process in zip(pipes, processes):
        _fold(fleet, pipe.recv())
        process.join(60)


def _fold(fleet, got: dict) -> None:
    for name in UPDATED:
        getattr(fleet, name).update(got[name])
    for name in COUNTS:
        setattr(fleet, name, getattr(fleet, name) + got[name])
    for name in LISTS:
        getattr(fleet, name).extend(got[name])
    fleet.statuses.update(got["statuses"])


def _process(args, base_url: str, share, start: float, stamp: str, pipe) -> None:
    from bench.agents_fleet import Fleet, agent_with_own_client, watch_lag

    async def agents() -> Fleet:
        fleet = Fleet(args.decide_every, args.floor)
        lag = asyncio.create_task(watch_lag(fleet))
        await asyncio.gather(
            *(
                agent_with_own_client(base_url, i, token, fleet, args, start, stamp, hooked)
                for i, token, hooked in share
            )
        )
        lag.cancel()
        return fleet

    fleet = asyncio.run(agents())
    got = {name: getattr(fleet, name) for name in (*UPDATED, *COUNTS, *LISTS)}
    pipe.send(got | {"statuses": dict(fleet.statuses)})
