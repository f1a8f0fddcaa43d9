"""Workers killed with SIGKILL at random points after approvals, on PostgreSQL and Redis: every
approved call ends with exactly one execution, and every run ends completed, waiting for a
person or failed with a reason, within two minutes of the worker coming back.

The normal test command runs a few kills; the full run is 100:

    RELIABILITY_KILLS=100 python -m pytest tests/test_reliability.py -s

RELIABILITY_SEED repeats a sequence of kills; the figures are printed and written to
var/test-logs/reliability-<kills>-kills.json, the processes' logs beside it.
"""

import json
import os
import random
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from . import reliability
from .stack import ROOT, production_env, redis_available

KILLS = int(os.environ.get("RELIABILITY_KILLS", "3"))


@pytest.fixture
def cluster(require_postgres, model, settings):
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: this test needs a real broker.")
    queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
    env = production_env(connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, model.url, queue)
    with tempfile.TemporaryDirectory() as beat_dir:
        cluster = reliability.Cluster(env, queue, Path(beat_dir) / "schedule")
        settings.TASKS_IN_PROCESS = False
        settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300 + 200 * KILLS)
def test_workers_killed_at_random_points_lose_nothing_double_nothing_and_leave_nothing_stuck(
    cluster, shop, reviewer, requester
):
    seed = os.environ.get("RELIABILITY_SEED") or str(random.randrange(10**6))
    rng = random.Random(seed)
    modes, trials = reliability.MODES, []
    for i in range(KILLS):
        trial = reliability.run_trial(cluster, rng, i, modes[i % len(modes)], reviewer, requester)
        print(
            f"kill {i + 1}: {trial.mode} of {trial.target} worker, in flight: {trial.in_flight}; settled in "
            f"{trial.settle if trial.settle is None else round(trial.settle, 1)} s; {trial.sweeps} sweep(s)"
        )
        trials.append(trial)

    figures = {"seed": seed, **reliability.summary(trials)}
    report = json.dumps(figures, indent=2)
    print(report)
    logs = ROOT / "var" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"reliability-{KILLS}-kills.json").write_text(report)
    assert figures["problems"] == []
    assert figures["settle"]["max_s"] <= reliability.SETTLE_LIMIT
