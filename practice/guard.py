"""Which runs and calls are practice ones, as approvals.planted asks (registered in PracticeConfig.ready()).

Read from the database each time; a lookup that fails raises, so what was about to run or resume does not."""

from .models import PracticeCall


def is_practice_run(run_id: int) -> bool:
    return PracticeCall.objects.filter(run_id=run_id).exists()


def without_practice(queryset):
    """Tool calls without the practice calls: what an agent may ever be shown."""
    return queryset.exclude(run__in=PracticeCall.objects.values("run_id"))


def runs_sql() -> str:
    """without_practice()'s runs as SQL, for a read written by hand (approvals/services/runnable.py)."""
    return f"SELECT run_id FROM {PracticeCall._meta.db_table}"
