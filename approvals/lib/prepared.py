"""Statements of ours that a kept connection prepares once: PostgreSQL parses and plans them once per connection
instead of for every use, where that took longer than running them (the audit trail's one-event statement, the
approved calls a resumption reads: bench/README.md).

Only on a connection kept between tasks or requests (CONN_MAX_AGE not 0: a worker's, a request slot's, the push
thread's): one closed at its request's end would prepare a statement for one use, a round trip more. A prepared
statement outlives a rolled-back transaction, and PostgreSQL plans it again by itself after a schema change; it
lives in its connection, so a pooler in front of PostgreSQL must keep a session on one server connection (no
transaction pooling).
"""

import hashlib
import weakref
from functools import lru_cache

from django.db import connection

_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # psycopg's connection -> the names it prepared


def kept(db=connection) -> bool:
    """Whether this connection outlives its request or task."""
    return db.settings_dict.get("CONN_MAX_AGE") != 0


def execute(cursor, sql: str, params: list, db=connection) -> None:
    """Run a statement (PostgreSQL's, with %s placeholders); on a kept connection as one prepared once for that
    connection (PREPARE with its %s numbered, then EXECUTE with the values)."""
    if db.vendor != "postgresql" or not kept(db):
        cursor.execute(sql, params)
        return
    name, prepare = _prepared_form(sql)
    names = _prepared.setdefault(db.connection, set())
    if name not in names:
        cursor.execute(prepare)
        names.add(name)
    cursor.execute(f"EXECUTE {name} ({', '.join(['%s'] * len(params))})", params)


@lru_cache(maxsize=32)  # a few statements (the trail's: one per guard, the head's lock, one per number of events)
def _prepared_form(sql: str) -> tuple[str, str]:
    """The statement's name (from its text) and its PREPARE, with its %s numbered $1, $2, ..."""
    name = "reviewhub_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
    parts = sql.split("%s")
    numbered = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], start=1))
    return name, f"PREPARE {name} AS {numbered}"
