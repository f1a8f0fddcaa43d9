"""Database connections kept between tasks: dropping the ones the server has ended, without a round trip.

A Celery worker keeps its connection between tasks (reviewhub/celery.py). Django's CONN_HEALTH_CHECKS would ask
PostgreSQL `SELECT 1` before each task reuses it: a round trip (~0.2-0.3 ms) between a decision and its tool's
body, for every task. A connection idle between tasks has nothing to read unless its server ended it (a
restart, an idle timeout, pg_terminate_backend: PostgreSQL says why and hangs up), so a glance at its socket
says the same without asking. A connection cut without a word (a host gone) is not seen this way; the task's
first statement then fails, and agents/loop.py takes the run further once more on a new connection.
"""

import select

from django.db import connections


def close_ended_by_server() -> None:
    """Close each of this thread's PostgreSQL connections that its server has spoken on, or hung up, while it
    was idle: it would fail its next statement. The next use opens a new one."""
    for conn in connections.all(initialized_only=True):
        if conn.vendor != "postgresql" or conn.connection is None or conn.in_atomic_block:
            continue
        try:
            readable = select.select([conn.connection.fileno()], [], [], 0)[0]
        except (OSError, ValueError):  # its socket is gone already
            readable = [True]
        if readable:
            conn.close()
