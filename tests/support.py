"""Helpers shared by the tests."""

resumed: list[int] = []


def record_resume(run_id: int, *, approved: bool = False) -> None:
    resumed.append(run_id)


def nothing_prepared() -> None:
    """This thread's PostgreSQL connection as a new one: no statement prepared on it (approvals/lib/prepared.py)."""
    import psycopg
    from django.db import connection

    from approvals.lib import prepared

    psycopg.Cursor(prepared.prepares_when_asked(connection)).execute("DEALLOCATE ALL")  # psycopg forgets its own


def prepared_runs(fragment: str) -> list[int]:
    """How many times each statement prepared on this thread's PostgreSQL connection whose text holds `fragment`
    has run, oldest first ([] when none is)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE strpos(statement, %s) > 0"
            " ORDER BY prepare_time",
            [fragment],
        )
        return [row[0] for row in cursor.fetchall()]
