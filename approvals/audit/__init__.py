"""The audit trail: append-only events, each chained by hash to the one before it in its run's chain.

record() and record_many() append under a lock on the run's AuditHead row (events
without a run: the global chain's), so a run's events hash in the order they are
stored and writers on different runs never wait for each other. verify() walks the
whole trail in chunks, names the first event that does not match, and checks the
end of every chain against its head, so that deleting the newest events is caught
as well, and every anchor (approvals/audit/anchors.py) against the run chains it names, so
that a run rewritten together with its head is caught too. docs/audit.md says what
this proves and what it does not.

Beside it: store.py, the write path in SQL of its own; observers.py, who hears of each committed event;
anchors.py, the run chains' heads written into the global chain; export.py, the trail as JSON lines or CSV;
verification.py, verify() and the walk it makes."""

import json
import math
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from approvals.audit import observers
from approvals.audit import store as audit_store
from approvals.audit.verification import (  # noqa: F401 (the package's API)
    CHUNK_SIZE,
    ChainCheck,
    check_rows,
    head_hash,
    heads,
    in_chunks,
    verify,
)
from approvals.lib.hashing import args_hash, canonical_json
from approvals.models import (
    GENESIS_HASH,
    GLOBAL_CHAIN,
    HASHED_FIELDS,  # noqa: F401 (read through the package: audit.HASHED_FIELDS)
    AuditEvent,
    Decision,
    ToolCall,
)

# Who may read the trail (auditors, administrators): the admin's view permission on it.
AUDIT_PERMISSION = "approvals.view_auditevent"


def _jsonb_float(text: str):
    """A JSON number with a fraction or an exponent, as PostgreSQL's jsonb hands it back, so the hash survives
    the round trip: jsonb stores numbers as exact decimals, so 1e16 comes back as 10000000000000000 (an int in
    Python) and -0.0 as 0.0. NaN and infinities are not JSON at all: they become strings."""
    value = float(text)
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e16:
        return int(value)
    return value + 0.0  # -0.0 becomes 0.0


def _json_safe(payload) -> dict:
    """The payload as PostgreSQL's jsonb gives it back. Serialised once and parsed once: the parser hands each
    float, and the NaN and infinities json.dumps writes, to _jsonb_float, instead of a walk of the whole payload
    in Python afterwards."""
    return json.loads(canonical_json(payload or {}), parse_float=_jsonb_float, parse_constant=_jsonb_float)


@dataclass(frozen=True)
class Entry:
    """One event to append with record_many()."""

    kind: str
    tool_call: ToolCall | None = None
    actor: User | None = None
    actor_label: str = ""
    payload: dict | None = None


def chain_of(run) -> int:
    return run.pk if run is not None else GLOBAL_CHAIN


def _event(entry: Entry, run, chain: int, now) -> AuditEvent:
    """The event, not yet linked: its prev_hash and hash come from the chain's head when it is appended."""
    actor = entry.actor
    return AuditEvent(
        run=run,
        tool_call=entry.tool_call,
        kind=entry.kind,
        actor=actor,
        actor_label=entry.actor_label or (actor.get_username() if actor else "system"),
        payload=_json_safe(entry.payload),
        created_at=now,
        chain=chain,
    )


def record_many(
    run, entries: list[Entry], *, only_if: tuple[str, list] = audit_store.NO_GUARD, new_chain: bool = False
) -> list[AuditEvent]:
    """Append events to the run's chain (the global one without a run), in order: on PostgreSQL one statement for
    one event, two however many otherwise (approvals/audit/store.py), three elsewhere.

    Only that chain's head row is locked, so writers on different runs never wait for each other. `only_if`: a
    statement (SQL, parameters) that must return a row for the events to be appended, run with them (one event;
    see store.append_one); [] when it returns none. `new_chain`: the run was inserted in this transaction, so
    nobody else can see its chain yet: its head row is inserted with its first events (one statement on
    PostgreSQL) instead of being looked for and locked.
    """
    if not entries:
        return []
    chain, now = chain_of(run), timezone.now()
    events = [_event(entry, run, chain, now) for entry in entries]
    if new_chain:
        _link(events, GENESIS_HASH)
        audit_store.append(events, None, chain=chain)
    elif not _append(events, chain, only_if):
        return []
    for event in events:
        observers.event_recorded(event)
    return events


def _append(events: list[AuditEvent], chain: int, only_if: tuple[str, list]) -> bool:
    """Append to an existing chain: one event in one statement where store.append_one() can, else locked in a
    transaction. False when the guard returned no row."""
    if len(events) == 1 and (done := audit_store.append_one(events[0], only_if=only_if)) is not None:
        guard_passed, appended = done
        if not guard_passed or appended:
            return guard_passed
        only_if = audit_store.NO_GUARD  # the guard ran and passed, but the chain had no head row yet
    return _append_locked(events, chain, only_if)


@transaction.atomic(savepoint=False)
def _append_locked(events: list[AuditEvent], chain: int, only_if: tuple[str, list]) -> bool:
    """The way for several events, a chain's first, or another database: the guard, the head locked, the events
    linked to it and appended, in one transaction."""
    if only_if != audit_store.NO_GUARD and not audit_store.guarded(only_if):
        return False
    head_id, last_hash = audit_store.lock_head(chain)
    _link(events, last_hash)
    audit_store.append(events, head_id, chain=chain)
    return True


def _link(events: list[AuditEvent], last_hash: str) -> None:
    """Chain the events, in order, after the hash `last_hash`."""
    for event in events:
        event.prev_hash = last_hash
        event.hash = last_hash = event.compute_hash()


def record(kind: str, *, run=None, tool_call=None, actor=None, actor_label: str = "", payload=None) -> AuditEvent:
    """Append one event to its run's chain."""
    run = run if run is not None else getattr(tool_call, "run", None)
    return record_many(run, [Entry(kind, tool_call, actor, actor_label, payload)])[0]


def of_run(run) -> Q:
    """A run's events, for .filter(): `run` is its id (or an expression for one, OuterRef("run") say).

    A run's events are its chain (an index scan of (chain, id)); those recorded before chains were per run
    stayed in the global chain, naming their run (a small partial index). Not `run_id=`: run_id has no index of
    its own, so that every event writes one index entry fewer (approvals/models/audit.py)."""
    return Q(chain=run) | Q(chain=GLOBAL_CHAIN, run=run)


# --- one call's chain, for the people who check it ---------------------------------------


@dataclass(frozen=True)
class ChainStep:
    event: AuditEvent
    hash_ok: bool
    previous_id: int | None  # the event before this one in its chain, when this one carries its hash
    first_in_chain: bool = False

    @property
    def link_ok(self) -> bool:
        return self.previous_id is not None or (self.first_in_chain and self.event.prev_hash == GENESIS_HASH)

    @property
    def title(self) -> str:
        return STEP_TITLES.get(self.event.kind, self.event.get_kind_display())

    @property
    def verdict_label(self) -> str:
        return dict(Decision.Verdict.choices).get(self.event.payload.get("verdict"), "Decided")


STEP_TITLES: dict[str, str] = {
    AuditEvent.Kind.PROPOSED: "Proposed, held for review",
    AuditEvent.Kind.AUTO_RUN: "Proposed, run without review",
    AuditEvent.Kind.INVALID: "Refused as invalid",
    AuditEvent.Kind.FORBIDDEN: "Refused as forbidden",
    AuditEvent.Kind.DECIDED: "Decided",
    AuditEvent.Kind.EXPIRED: "Expired",
    AuditEvent.Kind.EXECUTING: "Executing",
    AuditEvent.Kind.EXECUTED: "Executed",
    AuditEvent.Kind.FAILED: "Failed",
    AuditEvent.Kind.UNDONE: "Undone",
    AuditEvent.Kind.REVIEW_CLAIMED: "Opened for review",
    AuditEvent.Kind.REVIEW_RELEASED: "Released",
    AuditEvent.Kind.DEADLINE_NEAR: "Deadline near",
    AuditEvent.Kind.ESCALATED: "Escalated",
    AuditEvent.Kind.RETURNED: "Returned to the queue",
}


@dataclass(frozen=True)
class CallChain:
    steps: list[ChainStep]
    approved_hash: str
    executed_hash: str

    @property
    def intact(self) -> bool:
        return all(step.hash_ok and step.link_ok for step in self.steps)

    @property
    def ran_as_approved(self) -> bool | None:
        """None until something ran; then whether what ran is what was approved."""
        if not self.executed_hash:
            return None
        return self.executed_hash == self.approved_hash


def before_in_chain(field: str) -> Subquery:
    """A field of the event before each one in its chain (an index scan of (chain, id)), for .annotate()."""
    before = AuditEvent.objects.filter(chain=OuterRef("chain"), pk__lt=OuterRef("pk")).order_by("-pk")
    return Subquery(before.values(field)[:1])


def before(event: AuditEvent) -> tuple[int | None, str | None]:
    """The id and hash of the event before this one in its chain (None, None for a chain's first)."""
    return (
        AuditEvent.objects.filter(pk=event.pk)
        .annotate(before_id=before_in_chain("pk"), before_hash=before_in_chain("hash"))
        .values_list("before_id", "before_hash")
        .get()
    )


def call_chain(call: ToolCall) -> CallChain:
    """The call's events in order, each checked against its hash and linked to the event before it in its chain."""
    events = list(
        call.audit_events.select_related("actor")
        .annotate(before_id=before_in_chain("pk"), before_hash=before_in_chain("hash"))
        .order_by("pk")
    )
    steps = []
    approved_hash = executed_hash = ""
    for event in events:
        linked = event.before_id if event.before_hash == event.prev_hash else None
        steps.append(ChainStep(event, event.hash_matches, linked, first_in_chain=event.before_id is None))
        arguments = event.payload.get("arguments")
        if event.kind == AuditEvent.Kind.AUTO_RUN:
            approved_hash = args_hash(arguments)
        elif event.kind == AuditEvent.Kind.DECIDED and arguments is not None:
            approved_hash = event.payload.get("arguments_hash") or args_hash(arguments)
        elif event.kind == AuditEvent.Kind.EXECUTING or (event.kind == AuditEvent.Kind.EXECUTED and not executed_hash):
            executed_hash = args_hash(arguments)
    return CallChain(steps, approved_hash, executed_hash)
