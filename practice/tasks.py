from celery import shared_task

from .services import practice_plant_due


@shared_task(ignore_result=True)
def plant_due() -> int:
    """Periodic (settings.PERIODIC_WORK): plant the practice calls that are due; how many were planted."""
    return len(practice_plant_due())
