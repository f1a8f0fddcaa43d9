"""ReviewHub beside LangGraph + PostgresSaver and the OpenAI Agents SDK, in one run on one PostgreSQL server.

    make bench-venv                               # once: the peers, pinned in bench/requirements.txt, in .venv-bench
    .venv/bin/python bench/sidebyside.py          # 200 loop steps; resume at histories 2, 50, 200
    .venv/bin/python bench/sidebyside.py --steps 100 --samples 20
    .venv/bin/python bench/sidebyside.py --rounds 5   # the loops 5 times each, in turns (default 3)

Each part runs in a process of its own, one after the other: ReviewHub's loop
(bench/loop.py), its resumption through a warm Celery worker (bench/resume.py) and its
audit writers (bench/audit_writers.py) with the project's Python; the peers
(bench/peers/) with the bench virtualenv's Python, from bench/peers/ so that the
Agents SDK's `agents` package is not shadowed by ReviewHub's `agents` app. The three
loops run --rounds times in turns (ReviewHub, LangGraph, the SDK, again), since a shared
machine's speed drifts from one minute to the next: the loop's figures are those of each
one's median round by total time, and the ratios of the rounds are printed too. Every figure
is printed with its ratio to the best peer (ReviewHub ÷ best: below 1 is better for
times and WAL, above 1 for steps per second).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench.common import ensure_database  # noqa: E402

PEERS = BENCH / "peers"
BENCH_PYTHON = BENCH.parent / ".venv-bench" / "bin" / "python"
SERVER = "postgres://postgres@127.0.0.1:5432"

LOOP_FIGURES = [  # key, label, True when more is better
    ("steps_per_s", "loop: steps per second", True),
    ("total_s", "loop: total seconds", False),
    ("ms_per_step_first10", "loop: ms per step, first 10", False),
    ("ms_per_step_last10", "loop: ms per step, last 10", False),
    ("wal_kib_first10", "loop: WAL KiB per step, first 10", False),
    ("wal_kib_last10", "loop: WAL KiB per step, last 10", False),
]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--histories", default="2,50,200")
    parser.add_argument("--rounds", type=int, default=3, help="loop runs of each, in turns")
    parser.add_argument("--server", default=os.environ.get("BENCH_POSTGRES", SERVER), help="PostgreSQL, no database")
    return parser.parse_args()


def run_json(command: list[str], cwd: Path) -> dict:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{' '.join(command[:3])} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def reviewhub_loop(args) -> dict:
    url = f"{args.server}/reviewhub_bench_loop"
    return run_json(
        [sys.executable, "bench/loop.py", "--json", "--steps", str(args.steps), "--database-url", url], BENCH.parent
    )


def reviewhub(args) -> dict:
    url = f"{args.server}/reviewhub_bench_loop"
    py, root = sys.executable, BENCH.parent
    histories = args.histories.split(",")
    resume_args = ["--json", "--samples", str(args.samples), "--database-url", url, "--histories", *histories]
    resume = run_json([py, "bench/resume.py", *resume_args], root)
    writers = run_json(
        [py, "bench/audit_writers.py", "--json", "--database-url", url, "--writers", "1", "8", "16", "32"], root
    )
    return {"resume": resume, "audit": writers}


def peer(script: str, args, *, steps: int, samples: int) -> dict:
    """A peer's loop (unless steps is 0) and its resumption (unless samples is 0)."""
    if not BENCH_PYTHON.exists():
        raise SystemExit("No bench virtualenv: run `make bench-venv` first.")
    url = f"{args.server}/reviewhub_bench_peers"
    ensure_database(url)  # the peers' checkpointers make their tables, not their database
    command = [str(BENCH_PYTHON), script, url, str(steps), args.histories, str(samples)]
    return run_json(command, PEERS)


PEER_SCRIPTS = {"LangGraph": "langgraph_bench.py", "Agents SDK": "agents_sdk_bench.py"}


def loops_in_turns(args) -> dict[str, list[dict]]:
    """Each loop --rounds times, in turns, so that a drift of the machine's speed falls on all of them."""
    rounds: dict[str, list[dict]] = {"ReviewHub": [], **{name: [] for name in PEER_SCRIPTS}}
    for _ in range(args.rounds):
        rounds["ReviewHub"].append(reviewhub_loop(args))
        for name, script in PEER_SCRIPTS.items():
            rounds[name].append(peer(script, args, steps=args.steps, samples=0)["loop"])
    return rounds


def median_round(runs: list[dict]) -> dict:
    return sorted(runs, key=lambda run: run["total_s"])[len(runs) // 2]


def ratio(ours: float, peers: list[float], more_is_better: bool) -> str:
    best = max(peers) if more_is_better else min(peers)
    return f"{ours / best:.2f}x" if best else "-"


def table(ours: dict, peers: dict[str, dict]) -> list[str]:
    names = list(peers)
    lines = [f"{'figure':<40} {'ReviewHub':>10} " + " ".join(f"{n:>12}" for n in names) + "   ratio to best peer"]
    rows = [
        (label, ours["loop"][key], [p["loop"][key] for p in peers.values()], more) for key, label, more in LOOP_FIGURES
    ]
    for history in ours["resume"]:
        for stat in ("p50_ms", "p99_ms"):
            label = f"resume: decision → tool body, history {history}, {stat[:3]}"
            rows.append(
                (label, ours["resume"][history][stat], [p["resume"][history][stat] for p in peers.values()], False)
            )
    for label, value, others, more in rows:
        cells = " ".join(f"{v:>12.2f}" for v in others)
        lines.append(f"{label:<40} {value:>10.2f} {cells}   {ratio(value, others, more)}")
    for writers, figures in ours["audit"].items():
        lines.append(
            f"{f'audit events/s, {writers} writers':<40} {figures['events_per_s']:>10.0f} "
            + " ".join(f"{'-':>12}" for _ in names)
        )
    return lines


def main():
    args = parse_args()
    rounds = loops_in_turns(args)
    ours = reviewhub(args) | {"loop": median_round(rounds["ReviewHub"])}
    peers = {name: peer(script, args, steps=0, samples=args.samples) for name, script in PEER_SCRIPTS.items()}
    for name in peers:
        peers[name]["loop"] = median_round(rounds[name])  # the loops ran in turns above
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()},"
        f" load average {os.getloadavg()[0]:.1f}"
    )
    print("\n".join(table(ours, peers)))
    by_round = [
        ours_run["total_s"] / min(rounds[name][i]["total_s"] for name in peers)
        for i, ours_run in enumerate(rounds["ReviewHub"])
    ]
    print("loop: total seconds ÷ the best peer's, round by round: " + ", ".join(f"{r:.2f}x" for r in by_round))
    print(json.dumps({"ReviewHub": ours, **peers, "loop_rounds": rounds}))


if __name__ == "__main__":
    main()
