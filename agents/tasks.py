from celery import shared_task

from approvals import anchors, services

from . import dispatch, loop


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_run(run_id: int, only: str | None = None) -> None:
    """Take a run further. On the tools queue only="tools", on the turns queue only="turn":
    the work of the other kind is handed over to its queue."""
    following = loop.advance(run_id, only=only)
    if following:
        dispatch.enqueue(run_id, following)


@shared_task(ignore_result=True)
def expire_overdue() -> dict:
    """Celery beat runs this every 30 s: flag calls near their deadline, escalate or expire overdue ones."""
    return services.deadlines_apply()


@shared_task(ignore_result=True)
def sweep() -> dict:
    """Celery beat runs this every SWEEP_INTERVAL_SECONDS: take every stuck run further."""
    return services.sweep_apply()


@shared_task(ignore_result=True)
def anchor_audit() -> int:
    """Celery beat runs this every AUDIT_ANCHOR_SECONDS: anchor the run chains that changed into the global one."""
    return anchors.anchor_heads()
