"""The audit trail's write path in SQL of its own: it runs in every step, decision and execution.

Built by the ORM, the head's lock, the events' insert and the head's update cost about a
millisecond of Python each (compiling SQL for the 10-column insert and the locking
query), more than PostgreSQL takes to run them. Here the lock is one fixed query and, on
PostgreSQL, the insert and the head's update are one statement (a data-modifying WITH
over plain VALUES rows, less to adapt than arrays): two round trips however many events.
Elsewhere (SQLite, the embedded default) the ORM does the insert and the update, as it
always did; SQLite lets one writer in at a time.

One event on PostgreSQL (a decision, a claim, an output: most of the trail) takes one round trip:
the head is locked, the event's hash computed from the head's last hash by PostgreSQL's own
sha256() over the same canonical JSON (lib/hashing.py: event_canonical_around), the event inserted and the
head moved, in one statement. A chain's first event, which makes the head row, takes the way above.
On a connection kept between tasks (a worker's) that statement is prepared once per connection and guard, its
values bound on the server (approvals/lib/prepared.py): PostgreSQL parsing and planning its CTEs for every event
cost more than running them. So are the head's lock and a model turn's statement of several events (one text per
number of events, up to PREPARED_UP_TO).
"""

import json
from typing import Any

from django.db import connection
from django.db.models import F

from approvals.lib import prepared
from approvals.lib.hashing import canonical_json, event_canonical_around
from approvals.models import AuditEvent, AuditHead

_LOCK = "SELECT id, last_hash FROM approvals_audithead WHERE chain = %s"

# The events' rows, inserted by the first part of each statement below.
_APPENDED = """
WITH appended AS (
    INSERT INTO approvals_auditevent
        (run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash, hash, chain)
    VALUES {rows}
    RETURNING id
)"""
_APPEND = (
    _APPENDED
    + """, moved AS (
    UPDATE approvals_audithead SET last_hash = %s, seq = seq + %s, anchored = false WHERE id = %s
)
SELECT id FROM appended ORDER BY id
"""
)
# A new chain (its run inserted in the same transaction): the events and the chain's head row, one statement.
_START = (
    _APPENDED
    + """, started AS (
    INSERT INTO approvals_audithead (chain, last_hash, seq, anchored) VALUES (%s, %s, %s, false)
)
SELECT id FROM appended ORDER BY id
"""
)
_ROW = "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)"

_APPEND_ONE = """
WITH guard AS ({guard}), head AS (
    SELECT id, last_hash FROM approvals_audithead WHERE chain = %s::bigint AND EXISTS (SELECT FROM guard) FOR UPDATE
), moved AS (
    UPDATE approvals_audithead moving
    SET last_hash = encode(sha256(convert_to(%s::text || head.last_hash || %s::text, 'UTF8')), 'hex'),
        seq = moving.seq + 1, anchored = false
    FROM head WHERE moving.id = head.id
    RETURNING head.last_hash AS prev_hash, moving.last_hash AS hash
), appended AS (
    INSERT INTO approvals_auditevent
        (run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash, hash, chain)
    SELECT %s::bigint, %s::bigint, %s::text, %s::integer, %s::text, %s::jsonb, %s::timestamptz,
        prev_hash, hash, %s::bigint
    FROM moved
    RETURNING id, prev_hash, hash
)
SELECT EXISTS (SELECT FROM guard), appended.id, appended.prev_hash, appended.hash
FROM (SELECT) AS one LEFT JOIN appended ON true
"""
NO_GUARD: tuple[str, list] = ("SELECT", [])
# Several events (a model turn's) are one statement whose text depends on their number: prepared up to this many.
PREPARED_UP_TO = 8


def lock_head(chain: int) -> tuple[int, str]:
    """Lock the chain's head row (made on the chain's first event) for this transaction: its id and last hash."""
    sql = _LOCK + (" FOR UPDATE" if connection.features.has_select_for_update else "")
    found = prepared.rows(sql, [chain])
    if not found:
        head, _ = AuditHead.objects.select_for_update().get_or_create(chain=chain)
        return head.pk, head.last_hash
    return found[0]


def append_one(event: AuditEvent, *, only_if: tuple[str, list] = NO_GUARD) -> tuple[bool, bool] | None:
    """On PostgreSQL, append one event to its chain in one statement; it gets its id, prev_hash and hash.

    `only_if`: the SQL and parameters of a statement run first in the same one (an UPDATE ... RETURNING, say);
    the event is appended only if it returns a row. Returns whether it did, and whether the event was appended
    (not when the chain has no head row yet: then lock_head() and append()). Elsewhere than on PostgreSQL
    nothing is run: None."""
    if connection.vendor != "postgresql":
        return None
    payload_json = canonical_json(event.payload)  # hashed and stored: serialised once for both
    before, after = event_canonical_around(
        run_id=event.run_id,
        tool_call_id=event.tool_call_id,
        kind=event.kind,
        actor_id=event.actor_id,
        actor_label=event.actor_label,
        payload_json=payload_json,
        created_at=event.created_at,
    )
    row = (event.run_id, event.tool_call_id, event.kind, event.actor_id, event.actor_label)
    values = [*row, payload_json, event.created_at]
    guard, guard_params = only_if
    [(guarded, pk, prev_hash, hash_)] = prepared.rows(  # one per guard (none, or the claim), prepared once
        _APPEND_ONE.format(guard=guard), [*guard_params, event.chain, before, after, *values, event.chain]
    )
    if pk is None:
        return guarded, False
    event.pk, event.prev_hash, event.hash = pk, prev_hash, hash_
    event._state.adding, event._state.db = False, connection.alias
    return True, True


def guarded(only_if: tuple[str, list]) -> bool:
    """Run append_one()'s `only_if` statement on its own: whether it returned a row."""
    sql, params = only_if
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() is not None


def append(events: list[AuditEvent], head_id: int | None, *, chain: int) -> None:
    """Insert the events, in order, and move the head to the last one; each event gets its id. Without a
    `head_id` the chain is new (its run was inserted in this transaction): its head row is inserted instead."""
    if connection.vendor != "postgresql":
        AuditEvent.objects.bulk_create(events)
        moved = {"last_hash": events[-1].hash, "seq": F("seq") + len(events), "anchored": False}
        if head_id is None:
            AuditHead.objects.create(chain=chain, last_hash=events[-1].hash, seq=len(events))
        else:
            AuditHead.objects.filter(pk=head_id).update(**moved)
        return
    rows = [
        (e.run_id, e.tool_call_id, e.kind, e.actor_id, e.actor_label, json.dumps(e.payload), e.created_at)
        + (e.prev_hash, e.hash, e.chain)
        for e in events
    ]
    values: list[Any] = [value for row in rows for value in row]
    sql = (_APPEND if head_id is not None else _START).format(rows=", ".join([_ROW] * len(rows)))
    new_head = [chain, events[-1].hash, len(events)]
    head: list[Any] = [events[-1].hash, len(events), head_id] if head_id is not None else new_head
    if len(events) <= PREPARED_UP_TO:
        ids = [row[0] for row in prepared.rows(sql, values + head)]
    else:  # a rare long turn: not worth a statement kept prepared for the connection's life
        with connection.cursor() as cursor:
            cursor.execute(sql, values + head)
            ids = [row[0] for row in cursor.fetchall()]
    for event, pk in zip(events, ids, strict=True):
        event.pk = pk
        event._state.adding, event._state.db = False, connection.alias
