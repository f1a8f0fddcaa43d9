"""Advancing runs, and the periodic passes of settings.CELERY_BEAT_SCHEDULE that belong to runs.

Tool execution and model turns go to separate places (the tools and turns Celery queues, or two thread
pools in the embedded default: runtime/background.py), so a slow model never keeps an approved call
waiting; each hands the run over to the other when that kind of work is next."""

from celery import shared_task
from django.conf import settings

from approvals import services
from approvals.audit import anchors
from runtime.background import background

from . import loop
from .loop import TOOLS


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_run(run_id: int, only: str | None = None) -> None:
    """Take a run further. On the tools queue only="tools", on the turns queue only="turn":
    the work of the other kind is handed over to its queue."""
    following = loop.advance(run_id, only=only)
    if following:
        advance_later(run_id, following)


def queue_for(kind: str) -> str:
    return settings.TOOLS_QUEUE if kind == TOOLS else settings.TURNS_QUEUE


def advance_later(run_id: int, kind: str) -> None:
    """Do this kind of work ("tools" or "turn") of the run where that kind runs, after the caller's commit."""
    background(advance_run, run_id, kind, queue=queue_for(kind), pool=f"agent-{kind}", threads=2)


@shared_task(ignore_result=True)
def expire_overdue() -> dict:
    """Periodic (settings.CELERY_BEAT_SCHEDULE): flag calls near their deadline, escalate or expire overdue ones."""
    return services.deadlines_apply()


@shared_task(ignore_result=True)
def sweep() -> dict:
    """Periodic, every SWEEP_INTERVAL_SECONDS: take every stuck run further."""
    return services.sweep_apply()


@shared_task(ignore_result=True)
def anchor_audit() -> int:
    """Periodic, every AUDIT_ANCHOR_SECONDS: anchor the run chains that changed into the global one."""
    return anchors.anchor_heads()
