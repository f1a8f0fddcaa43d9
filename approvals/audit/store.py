"""The audit trail's write path in SQL of its own: it runs in every step, decision and execution.

Built by the ORM, the head's lock, the events' insert and the head's update cost about a
millisecond of Python each (compiling SQL for the 10-column insert and the locking
query), more than PostgreSQL takes to run them. Here the lock is one fixed query and, on
PostgreSQL, the insert and the head's update are one statement (a data-modifying WITH
over plain VALUES rows, less to adapt than arrays): two round trips however many events.
Elsewhere (SQLite, the embedded default) the ORM does the insert and the update, as it
always did; SQLite lets one writer in at a time.
"""

import json

from django.db import connection
from django.db.models import F

from approvals.models import AuditEvent, AuditHead

_LOCK = "SELECT id, last_hash FROM approvals_audithead WHERE chain = %s"

_APPEND = """
WITH appended AS (
    INSERT INTO approvals_auditevent
        (run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash, hash, chain)
    VALUES {rows}
    RETURNING id
), moved AS (
    UPDATE approvals_audithead SET last_hash = %s, seq = seq + %s, anchored = false WHERE id = %s
)
SELECT id FROM appended ORDER BY id
"""
_ROW = "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)"


def lock_head(chain: int) -> tuple[int, str]:
    """Lock the chain's head row (made on the chain's first event) for this transaction: its id and last hash."""
    sql = _LOCK + (" FOR UPDATE" if connection.features.has_select_for_update else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, [chain])
        row = cursor.fetchone()
    if row is None:
        head, _ = AuditHead.objects.select_for_update().get_or_create(chain=chain)
        return head.pk, head.last_hash
    return row[0], row[1]


def append(events: list[AuditEvent], head_id: int) -> None:
    """Insert the events, in order, and move the head to the last one; each event gets its id."""
    if connection.vendor != "postgresql":
        AuditEvent.objects.bulk_create(events)
        moved = {"last_hash": events[-1].hash, "seq": F("seq") + len(events), "anchored": False}
        AuditHead.objects.filter(pk=head_id).update(**moved)
        return
    rows = [
        (e.run_id, e.tool_call_id, e.kind, e.actor_id, e.actor_label, json.dumps(e.payload), e.created_at)
        + (e.prev_hash, e.hash, e.chain)
        for e in events
    ]
    sql = _APPEND.format(rows=", ".join([_ROW] * len(rows)))
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row] + [events[-1].hash, len(events), head_id])
        ids = [row[0] for row in cursor.fetchall()]
    for event, pk in zip(events, ids, strict=True):
        event.pk = pk
        event._state.adding, event._state.db = False, connection.alias
