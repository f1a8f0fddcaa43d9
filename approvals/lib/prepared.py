"""Statements of ours that a kept connection prepares once: PostgreSQL parses and plans them once per connection
instead of for every use, where that took longer than running them (the audit trail's one-event statement, the
approved calls a resumption reads: bench/README.md).

psycopg prepares them at the protocol level and sends their values apart from their text (server-side binding),
rather than Django's cursor, which quotes the values into the text in Python for PostgreSQL to parse back: for
the trail's eleven values ~25 us of the writer's CPU per event more (bench/README.md, 2026-12-07).
Django's cursor wrapper still wraps it, so its statement log (DEBUG, the tests' query counts), execute wrappers
and error translation see it as any other (wrapped or not, the same CPU: bench/README.md).

Only on a connection kept between tasks or requests (CONN_MAX_AGE not 0: a worker's, a request slot's, the push
thread's): one closed at its request's end would prepare a statement for one use, a round trip more. psycopg
forgets its prepared statements when a transaction or a savepoint rolls back (it deallocates them, so the next
use prepares again), and PostgreSQL plans one again by itself after a schema change; a statement lives in its
connection, so a pooler in front of PostgreSQL must keep a session on one server connection (no transaction
pooling).
"""

import psycopg
from django.db import connection

# psycopg prepares a statement after it ran this many times; Django's None turns preparing off even when asked.
# Ours are prepared when asked (prepare=True); Django's own cursors bind on the client and are never prepared.
ONLY_WHEN_ASKED = 2**31 - 1


class _Preparing(psycopg.Cursor):
    """psycopg's cursor binding values on the server, preparing each statement it runs once per connection."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def kept(db=connection) -> bool:
    """Whether this connection outlives its request or task."""
    return db.settings_dict.get("CONN_MAX_AGE") != 0


def rows(sql: str, params: list, db=connection) -> list[tuple]:
    """Run a statement of ours (PostgreSQL's, with %s placeholders) and return its rows: on a kept connection as
    one prepared once for that connection, its values bound on the server."""
    if db.vendor != "postgresql" or not kept(db):
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    db.close_if_health_check_failed()
    cursor = _Preparing(prepares_when_asked(db))
    with db._prepare_cursor(cursor) as wrapped:  # Django's wrapper, as db.cursor() gives: its log, its errors
        wrapped.execute(sql, params)
        return wrapped.fetchall()


def prepares_when_asked(db=connection) -> psycopg.Connection:
    """db's psycopg connection (opened if need be), preparing a statement when asked (prepare=True) and only then."""
    db.ensure_connection()
    if db.connection.prepare_threshold is None:
        db.connection.prepare_threshold = ONLY_WHEN_ASKED
    return db.connection
