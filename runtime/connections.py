"""Database connections kept between tasks: dropping the ones the server has ended, without a round trip.

A Celery worker keeps its connection between tasks (reviewhub/celery.py), a web process's request slots between
requests (runtime/slots.py) and its push thread between pushes (approvals/live/fanout.py). Django's
CONN_HEALTH_CHECKS would ask PostgreSQL `SELECT 1` before each task, request or push reuses it: a round trip
(~0.2-0.3 ms) between a decision and its tool's body, and one more per agent API request. A connection idle
between uses has nothing to read unless its server ended it (a restart, an idle timeout, pg_terminate_backend:
PostgreSQL says why and hangs up), so a glance at its socket says the same without asking. A connection cut
without a word (a host gone) is not seen this way; the first statement then fails (a task's run is taken further
once more on a new connection by agents/loop.py; a request answers 500 and its connection is closed after it).
"""

import select

from django.db import close_old_connections, connections


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


def close_unusable() -> None:
    """Before a kept connection's next use (a task, a push): close it if it outlived its age or failed (Django's
    close_old_connections), or if its server ended it while it was idle."""
    close_old_connections()
    close_ended_by_server()
