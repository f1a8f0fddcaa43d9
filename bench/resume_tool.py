"""The tool bench/resume.py approves: its body's first line notes the time in Redis, keyed by the run; and the
bare task it measures beside it, which does nothing else.

Imported by the benchmark and by the Celery worker it starts (`celery worker --include bench.resume_tool`).
"""

import os
import time

import redis
from celery import shared_task
from celery.signals import task_prerun
from django.conf import settings
from pydantic import BaseModel

from approvals.models import Tier
from approvals.tools import Tool, registry


class MarkArgs(BaseModel):
    n: int = 0


_redis: list[redis.Redis] = []


def marks() -> redis.Redis:
    """One client for the marks, connected once: a new connection per mark would be timed as the worker's."""
    if not _redis:
        _redis.append(redis.Redis.from_url(settings.REDIS_URL))
    return _redis[0]


def mark(args: MarkArgs, ctx) -> str:
    started = time.time()
    marks().set(f"bench-resume-{ctx.run_id}", repr(started), ex=600)
    return "marked"


registry.register(
    Tool(
        name="bench_mark",
        description="Note the time (benchmark only).",
        args_model=MarkArgs,
        tier=Tier.APPROVAL,
        func=mark,
    )
)
# The benchmark's runs are the orders agent's (no checkpoint holds its answer): it may call bench_mark too.
registry.allow(agent="orders", tools=[*registry.allowed("orders"), "bench_mark"])


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)  # advance_run's options
def bare_mark(key: str) -> None:
    """The floor: a task that only notes the time, on the same broker, worker and queue as a resumption."""
    marks().set(key, repr(time.time()), ex=600)


def _note_task_start(sender=None, args=None, **kwargs):
    """When the worker starts the task that resumes a run: where the time goes, with --trace only (the mark is a
    Redis round trip in the worker before the body, which the bare task does not pay)."""
    if args and getattr(sender, "name", "") == "agents.tasks.advance_run":  # not the notification tasks of the call
        marks().set(f"bench-task-{args[0]}", repr(time.time()), ex=600, nx=True)


if os.environ.get("BENCH_RESUME_TRACE"):  # set by bench/resume.py --trace for the worker it starts
    task_prerun.connect(_note_task_start)
