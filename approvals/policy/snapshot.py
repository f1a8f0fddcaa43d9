"""The policy rules, turn rules and tool settings, read once per change instead of once per call or step.

Every save or delete of a rule, a turn rule, a tool setting or a group writes a new random stamp into
PolicyStamp's one row, in the same transaction (signals connected in apps.py). current()
reads the stamp, one small statement, and reads every enabled rule and every tool setting
again only when the stamp differs from the one its snapshot was read under. A stamp is never
reused, so a snapshot read inside a transaction that was rolled back is never mistaken for a
later change; a change committed between reading the stamp and the rules is read again next
time, since the stamp then differs. A missing row (a database emptied by hand) is written anew.

The stamp also changes with notification preferences (ops/apps.py): whether anyone asked for an email per
call is read once per stamp too (ops/notify.py).

What this does not see: changes made with queryset update(), bulk_create() or raw SQL, which
send no signals. ReviewHub makes none; code that does must call changed().
"""

import threading
import time
import uuid
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Subquery

from approvals.models import PolicyRule, PolicyStamp, ToolSetting, TurnRule


@dataclass(frozen=True)
class Snapshot:
    stamp: str
    rules: dict[str, list[PolicyRule]] = field(default_factory=dict)  # by tool, in order, shadow rules included
    settings: dict[str, ToolSetting] = field(default_factory=dict)
    turn_rules: tuple[TurnRule, ...] = ()


_snapshot = Snapshot(stamp="")
_this_thread = threading.local()  # when this thread last read a snapshot, and which (read_last())
REUSE_SECONDS = 1.0


def _stamp() -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT stamp FROM {PolicyStamp._meta.db_table} WHERE id = 1")
        row = cursor.fetchone()
    if row is None:  # a database emptied by hand (or a test's flush): start again
        return PolicyStamp.objects.get_or_create(pk=1, defaults={"stamp": uuid.uuid4().hex})[0].stamp
    return row[0]


def _read(stamp: str) -> Snapshot:
    rules: dict[str, list[PolicyRule]] = {}
    for rule in PolicyRule.objects.filter(enabled=True).select_related("group"):
        rules.setdefault(rule.tool_name, []).append(rule)
    settings = {s.tool_name: s for s in ToolSetting.objects.select_related("group", "escalate_to")}
    turn_rules = tuple(TurnRule.objects.filter(enabled=True).select_related("group").order_by("order", "id"))
    return Snapshot(stamp, rules, settings, turn_rules)


def stamp_read_with():
    """The stamp as an expression for another statement's .annotate(), to pass to current(stamp=...): the query
    that reads what policy is about (an approved call) then reads the stamp too, instead of a statement of its own."""
    return Subquery(PolicyStamp.objects.filter(pk=1).values("stamp")[:1])


def current(*, stamp: str | None = None) -> Snapshot:
    """The enabled rules, turn rules and tool settings as committed (or as this transaction changed them).
    `stamp`: read just now by the caller (stamp_read_with()); None reads it."""
    global _snapshot
    stamp = stamp or _stamp()
    snapshot = _snapshot
    if snapshot.stamp != stamp:
        snapshot = _snapshot = _read(stamp)
    _this_thread.read = (time.monotonic(), snapshot)
    return snapshot


def read_last() -> Snapshot:
    """The snapshot this thread read in the last second, without asking the database again: for work that
    follows at once from work done under it (a model turn claimed by the commit of the step before it, whose
    gate read the policy); otherwise current()."""
    at, snapshot = getattr(_this_thread, "read", (0.0, None))
    return snapshot if snapshot is not None and time.monotonic() - at < REUSE_SECONDS else current()


def changed(**kwargs) -> None:
    """A rule, a setting or a group changed: a new stamp, in the transaction that changed it."""
    PolicyStamp.objects.update_or_create(pk=1, defaults={"stamp": uuid.uuid4().hex})


def tool_setting(tool_name: str, *, fresh: bool = True) -> ToolSetting:
    """The stored setting, or the defaults (any reviewer, the site's time limit, reject); shared, read-only:
    from this process's snapshot, which a change replaces. Not `fresh`: as this thread read it a moment ago
    (policy evaluating a call, after reading its rules)."""
    snapshot = current() if fresh else read_last()
    return snapshot.settings.get(tool_name) or ToolSetting(tool_name=tool_name)
