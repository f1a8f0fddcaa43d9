from celery import shared_task

from approvals import services

from . import loop


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_run(run_id: int) -> None:
    loop.advance(run_id)


@shared_task(ignore_result=True)
def expire_overdue() -> dict:
    """Celery beat runs this every 30 s: flag calls near their deadline, escalate or expire overdue ones."""
    return services.deadlines_apply()
