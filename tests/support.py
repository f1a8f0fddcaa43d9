"""Helpers shared by the tests."""

resumed: list[int] = []


def record_resume(run_id: int, *, approved: bool = False) -> None:
    resumed.append(run_id)


def nothing_prepared() -> None:
    """This thread's PostgreSQL connection as a new one: no statement prepared on it (approvals/lib/prepared.py)."""
    from django.db import connection

    from approvals.lib import prepared

    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    prepared._prepared.pop(connection.connection, None)
