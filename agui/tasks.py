"""The background task that takes an AG-UI agent's run further (runtime/background.py: Celery or a thread)."""

from celery import shared_task

from runtime.background import background


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_agui_run(run_id: int) -> None:
    from .services import run_advance

    again = run_advance(run_id=run_id)
    if again is not None:
        advance_later(run_id, countdown=again)


def advance_later(run_id: int, countdown: float = 0) -> None:
    background(advance_agui_run, run_id, countdown=countdown, pool="agui", threads=2)


@shared_task(ignore_result=True)
def sweep_exchanges() -> int:
    """Periodic (settings.PERIODIC_WORK): fail the runs whose exchange's sender stopped, and take further those
    whose resumption was lost (agui/sweep.py)."""
    from .sweep import stalled_fail, stalled_resume

    return stalled_fail() + stalled_resume()
