"""The approved calls as their execution reads them: with their run, the policy's stamp and their decisions.

runnable_calls() is the queryset, for every reader. approved_in_run() is the same read for the one that waits on it
most, a run resumed after a decision (agents/loop.py): one statement written by hand and built once per process and
database, because the ORM spent about 3 ms of Python compiling its two statements and building their rows on every
resumption (the database ran both in about 0.7 ms). On a kept connection (a worker's) it is a prepared statement
(approvals/lib/prepared.py): PostgreSQL took 0.27 ms to plan it and 0.05 ms to run it. tests/approvals/test_runnable.py
holds the two reads equal.
"""

from functools import lru_cache

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet

from approvals.lib import prepared
from approvals.lib.rows import Columns
from approvals.policy import snapshot as policy_snapshot

from ..models import Decision, PolicyStamp, Run, ToolCall
from ..planted import planted

EXECUTABLE = (ToolCall.Kind.CALL, ToolCall.Kind.CHECKPOINT)  # what runs a tool body once approved


def runnable_calls(**where) -> QuerySet[ToolCall]:
    """Approved (or abandoned executing) calls as toolcall_execute(loaded=True) takes them: with their run, the
    policy's stamp and their decisions, read in two statements however many there are. Practice calls are left
    out (approvals/planted.py): they are never executed."""
    calls = ToolCall.objects.filter(status__in=ToolCall.RUNNABLE, **where).select_related("run")
    calls = planted.hide(calls).annotate(policy_stamp=policy_snapshot.stamp_read_with())
    return calls.prefetch_related(ToolCall.decisions_prefetch())


CALL, RUN, DECISION = Columns(ToolCall, "c"), Columns(Run, "r"), Columns(Decision, "d")


@lru_cache(maxsize=1)
def _reviewer() -> Columns:
    return Columns(get_user_model(), "u")  # once the apps are loaded


def approved_in_run(run_id: int) -> list[ToolCall]:
    """runnable_calls(run_id=run_id, run__status__in=Run.ACTIVE, kind__in=EXECUTABLE), oldest first, in one
    statement: each call with its run, `policy_stamp` and `loaded_decisions` (their reviewers with them), one row
    per decision (a call without any has one row, its decision's columns empty)."""
    db = connections[DEFAULT_DB_ALIAS]  # this thread's connection itself (the proxy is not hashable)
    rows = prepared.rows(_statement(db), [*ToolCall.RUNNABLE, *EXECUTABLE, *Run.ACTIVE, run_id], db)
    calls: dict[int, ToolCall] = {}
    for row in rows:
        call = calls.get(row[0])
        if call is None:
            call = calls[row[0]] = _call(row, db)
        if row[DECIDED] is not None:
            decision = DECISION.build(row, DECIDED, db)
            reviewer = row[DECIDED + DECISION.width]
            decision.reviewer = _reviewer().build(row, DECIDED + DECISION.width, db) if reviewer is not None else None
            decision.tool_call = call
            call.loaded_decisions.append(decision)
    return list(calls.values())


DECIDED = CALL.width + 1 + RUN.width  # where a row's decision starts: after the call, the stamp and the run


def _call(row, db) -> ToolCall:
    call = CALL.build(row, 0, db)
    call.policy_stamp = row[CALL.width]
    call.run = RUN.build(row, CALL.width + 1, db)
    call.loaded_decisions = []
    return call


_BUILT: dict[str, str] = {}  # per database vendor


def _statement(db) -> str:
    if db.vendor not in _BUILT:
        _BUILT[db.vendor] = _build(db.ops.quote_name)
    return _BUILT[db.vendor]


def _marks(values) -> str:
    return ", ".join(["%s"] * len(values))


def _build(quote) -> str:
    practice = planted.runs_sql()  # the practice runs' ids: their calls never run
    hidden = f" AND NOT (c.run_id IN ({practice}))" if practice else ""
    users = quote(_reviewer().model._meta.db_table)
    return (
        f"SELECT {CALL.select(quote)},"
        f" (SELECT s.stamp FROM {quote(PolicyStamp._meta.db_table)} s WHERE s.id = 1) AS policy_stamp,"
        f" {RUN.select(quote)}, {DECISION.select(quote)}, {_reviewer().select(quote)}"
        f" FROM {quote(ToolCall._meta.db_table)} c INNER JOIN {quote(Run._meta.db_table)} r ON c.run_id = r.id"
        f" LEFT OUTER JOIN {quote(Decision._meta.db_table)} d ON d.tool_call_id = c.id"
        f" LEFT OUTER JOIN {users} u ON d.reviewer_id = u.id"
        f" WHERE c.status IN ({_marks(ToolCall.RUNNABLE)}) AND c.kind IN ({_marks(EXECUTABLE)})"
        f" AND r.status IN ({_marks(Run.ACTIVE)}) AND c.run_id = %s{hidden}"
        " ORDER BY c.id, d.created_at, d.id"
    )
