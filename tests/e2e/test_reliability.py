"""Whatever executes an approved call, killed with SIGKILL at random points, on PostgreSQL and Redis: ReviewHub's
Celery workers (tests/e2e/reliability.py), a remote agent process and the stdio MCP gateway
(tests/e2e/reliability_targets.py). Every approved call ends with exactly one effect, and everything settles
(calls executed, runs completed, waiting for a person or failed with a reason) within two minutes.

The normal test command runs one kill of each target; the long run spreads N kills across the three:

    RELIABILITY_KILLS=102 RELIABILITY_SEED=2112 python -m pytest tests/e2e/test_reliability.py -s

RELIABILITY_TARGETS (a comma list of worker, agent, gateway) picks targets; RELIABILITY_SEED repeats a sequence
of kills. The figures are printed and written to var/test-logs/reliability-<kills>-kills.json, the processes' logs
beside it.
"""

import json
import os
import random
import socket
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from tests.stack import ROOT, production_env, redis_available, start_asgi

from . import reliability, reliability_targets

TARGETS = tuple(os.environ.get("RELIABILITY_TARGETS", "worker,agent,gateway").split(","))
KILLS = int(os.environ.get("RELIABILITY_KILLS", str(len(TARGETS))))
PORTS = range(18700, 18800)


def free_port_in(ports: range) -> int:
    for port in ports:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


@pytest.fixture
def env(require_postgres, model):
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: this test needs a real broker.")
    queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
    env = production_env(connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, model.url, queue)
    return env | reliability.TIMINGS


@pytest.fixture
def cluster(env, settings):
    with tempfile.TemporaryDirectory() as beat_dir:
        queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
        cluster = reliability.Cluster(env, queue, Path(beat_dir) / "schedule")
        settings.TASKS_IN_PROCESS = False
        settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def targets(cluster, env, tmp_path) -> dict:
    found = {}
    if "agent" in TARGETS:
        port = free_port_in(PORTS)
        start_asgi(cluster.processes, port)
        found["agent"] = reliability_targets.AgentTarget(f"http://127.0.0.1:{port}", tmp_path / "agent")
    if "gateway" in TARGETS:
        found["gateway"] = reliability_targets.GatewayTarget(env, tmp_path / "gateway")
    return found


def one_kill(i: int, target: str, rng, cluster, targets, reviewer, requester):
    turn = i // len(TARGETS)  # the how-manieth kill of this target
    if target == "worker":
        modes = reliability.MODES
        trial = reliability.run_trial(cluster, rng, i, modes[turn % len(modes)], reviewer, requester)
        print(
            f"kill {i + 1}: {trial.mode} of {trial.target} worker, in flight: {trial.in_flight}; settled in "
            f"{trial.settle if trial.settle is None else round(trial.settle, 1)} s; {trial.sweeps} sweep(s)"
        )
        return trial
    points = reliability_targets.POINTS
    kill = reliability_targets.run_kill(targets[target], rng, turn, points[turn % len(points)], reviewer)
    shown, settled = (None if s is None else round(s, 1) for s in (kill.shown, kill.settled))
    print(
        f"kill {i + 1}: {target} {kill.point} ({kill.tool}, call {kill.call_id}, {kill.delay:.1f} s in); "
        f"shown in {shown} s, settled in {settled} s; {' → '.join(kill.path)}; effects {kill.effects}"
    )
    return kill


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300 + 200 * KILLS)
def test_whatever_executes_a_call_killed_at_random_points_loses_nothing_doubles_nothing_and_leaves_nothing_stuck(
    cluster, targets, shop, reviewer, requester
):
    seed = os.environ.get("RELIABILITY_SEED") or str(random.randrange(10**6))
    rng, began = random.Random(seed), time.monotonic()
    done: dict = {target: [] for target in TARGETS}
    for i in range(KILLS):
        target = TARGETS[i % len(TARGETS)]
        done[target].append(one_kill(i, target, rng, cluster, targets, reviewer, requester))

    figures = {"seed": seed, "wall_s": round(time.monotonic() - began), "targets": {}}
    if "worker" in done:
        figures["targets"]["worker"] = reliability.summary(done["worker"])
    for target in ("agent", "gateway"):
        if target in done:
            figures["targets"][target] = reliability_targets.summary(done[target])
    trials = [t for kills in done.values() for t in kills]
    figures["duplicates"] = sum(t.duplicates for t in trials)
    figures["problems"] = [f"{t.target} ({getattr(t, 'point', '')}): {p}" for t in trials for p in t.problems]
    report = json.dumps(figures, indent=2)
    print(report)
    logs = ROOT / "var" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"reliability-{KILLS}-kills.json").write_text(report)
    assert figures["duplicates"] == 0
    assert figures["problems"] == []
