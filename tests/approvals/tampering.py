"""Tests only: a way around the append-only trigger, to prove verify_audit catches tampering.

On PostgreSQL the trigger is disabled inside the test's own transaction (ALTER
TABLE is transactional there), so it is back as soon as the test rolls back; on
SQLite there is no trigger to lift.
"""

from contextlib import contextmanager

from django.db import connection

TRIGGER = "approvals_auditevent_append_only"


@contextmanager
def tampering():
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        # Deferred foreign-key checks of rows inserted by the test must run before ALTER TABLE.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE approvals_auditevent DISABLE TRIGGER {TRIGGER}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE approvals_auditevent ENABLE TRIGGER {TRIGGER}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def swap_ids(first_id: int, second_id: int) -> None:
    """Reorder two events by swapping their ids (their contents and hashes stay as they were)."""
    with connection.cursor() as cursor:
        for old, new in ((first_id, -1), (second_id, first_id), (-1, second_id)):
            cursor.execute("UPDATE approvals_auditevent SET id = %s WHERE id = %s", [new, old])
