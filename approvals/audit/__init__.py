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
anchors.py, the run chains' heads written into the global chain; export.py, the trail as JSON lines or CSV."""

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from approvals.audit import observers
from approvals.audit import store as audit_store
from approvals.lib.hashing import args_hash, canonical_json, event_hash
from approvals.models import GENESIS_HASH, GLOBAL_CHAIN, HASHED_FIELDS, AuditEvent, AuditHead, Decision, ToolCall

CHUNK_SIZE = 5000
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


def head_hash(chain: int = GLOBAL_CHAIN) -> str | None:
    """The hash of a chain's newest event as recorded in its head row; None if there is no head row."""
    return AuditHead.objects.filter(chain=chain).values_list("last_hash", flat=True).first()


def heads() -> dict[int, str]:
    return dict(AuditHead.objects.values_list("chain", "last_hash"))


# --- reading the trail in chunks ---------------------------------------------------------


def in_chunks(queryset, fields, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple]:
    """Rows of `fields` (the first must be "id") in id order, chunk_size at a time.

    Keyset pagination (id > last id seen) rather than one server-side cursor: memory
    stays at one chunk on both sides, and PostgreSQL does not materialise a
    million-row WITH HOLD cursor, which is what a cursor outside a transaction does.
    """
    last_id = None
    while True:
        chunk = queryset if last_id is None else queryset.filter(pk__gt=last_id)
        rows = list(chunk.order_by("pk").values_list(*fields)[:chunk_size])
        yield from rows
        if len(rows) < chunk_size:
            return
        last_id = rows[-1][0]


# --- verification ----------------------------------------------------------------------


@dataclass(frozen=True)
class ChainCheck:
    count: int
    head: str | None  # when ok, the hash of the last event walked: write it down as an anchor
    broken_at: int | None = None
    problem: str = ""
    anchored: int = 0  # heads recorded by anchor events, each checked against its recomputed chain

    @property
    def ok(self) -> bool:
        return not self.problem


@dataclass
class _Chain:
    previous: str = GENESIS_HASH
    previous_id: int | None = None
    head_seen: bool = False
    seq: int = 0  # events walked


def check_rows(rows, *, heads: dict[int, str], anchor: str = "") -> ChainCheck:
    """Walk (id, chain, *HASHED_FIELDS, hash) rows in id order; stop at the first that does not match.

    Each event must follow the one before it in its own chain (its run's, or the
    global one). `heads` are the AuditHead rows read before the walk: each must be
    the hash of a walked event of its chain (events appended during the walk may
    follow it). `anchor`, a hash written down earlier outside ReviewHub, must be found. Each
    `anchor` event of the global chain must agree with the chains it names as walked up to it.
    """
    chains: dict[int, _Chain] = {}
    count, last_hash, anchor_seen, anchored = 0, None, False, 0
    for event_id, chain_key, *fields, stored_hash in rows:
        values = dict(zip(HASHED_FIELDS, fields))
        chain = chains.setdefault(chain_key, _Chain())
        problem, broken_at = _link_problem(event_id, values, stored_hash, chain.previous, chain.previous_id), event_id
        if not problem and chain_key not in (GLOBAL_CHAIN, values["run_id"]):
            problem = f"event {event_id} is in the chain of run {chain_key} but belongs to run {values['run_id']}."
        if not problem and values["kind"] == AuditEvent.Kind.ANCHOR and chain_key == GLOBAL_CHAIN:
            problem, broken_at, checked = _anchor_problem(event_id, values["payload"], chains)
            anchored += checked
        if problem:
            return ChainCheck(count, last_hash, broken_at, problem, anchored)
        chain.seq, chain.previous, chain.previous_id = chain.seq + 1, stored_hash, event_id
        count, last_hash = count + 1, stored_hash
        chain.head_seen = chain.head_seen or stored_hash == heads.get(chain_key)
        anchor_seen = anchor_seen or stored_hash == anchor
    problem, broken_at = _heads_problem(chains, heads, count)
    if problem:
        return ChainCheck(count, last_hash, broken_at, problem, anchored)
    if anchor and not anchor_seen:
        return ChainCheck(
            count, last_hash, None, f"no event has the anchor hash {anchor}: the trail was rewritten up to there."
        )
    return ChainCheck(count, last_hash, anchored=anchored)


def _anchor_problem(anchor_id: int, payload: dict, chains: dict[int, "_Chain"]) -> tuple[str, int, int]:
    """An anchor event against the run chains as walked up to it: (what is wrong, the event to name, heads checked).

    When the anchor was written, each chain it names had `seq` events, the last with `hash`, all stored
    before it: their writers held the chain's head lock, which the anchor took (approvals/audit/anchors.py),
    and later writers waited for it, so their events come after it.
    """
    heads = payload.get("heads") or {}
    for key, head in heads.items():
        chain = chains.get(int(key), _Chain()) if str(key).isdigit() else _Chain()
        if (chain.seq, chain.previous) != (head.get("seq"), head.get("hash")):
            where = f", ending in event {chain.previous_id} (hash {chain.previous})" if chain.previous_id else ""
            return (
                f"run {key} was rewritten: anchor event {anchor_id} recorded {head.get('seq')} events ending in hash"
                f" {head.get('hash')}, but before it that run's chain has {chain.seq}{where}.",
                chain.previous_id or anchor_id,
                0,
            )
    return "", anchor_id, len(heads)


def _heads_problem(chains: dict[int, _Chain], heads: dict[int, str], count: int) -> tuple[str, int | None]:
    """The first chain whose end does not match its head row, and the last event walked in it."""
    for key in sorted(set(chains) | set(heads)):
        chain, head = chains.get(key, _Chain()), heads.get(key)
        if head is None and chain.previous_id is not None and head_hash(key) is not None:
            continue  # a chain begun during the walk: its head row came after the heads were read
        problem = _end_problem(head, head == GENESIS_HASH or chain.head_seen, count, chain.previous_id)
        if problem:
            return problem, chain.previous_id if chain.previous_id and head else None
    return "", None


def _link_problem(event_id, values: dict, stored_hash: str, previous: str, previous_id) -> str:
    """What is wrong with one event of the chain: its own hash, or its link to the one before."""
    if event_hash(**values) != stored_hash:
        return f"event {event_id} was changed: its content no longer matches its hash."
    if values["prev_hash"] != previous:
        after = "the start of the trail" if previous_id is None else f"event {previous_id}"
        return (
            f"event {event_id} does not follow {after}: an event between them was deleted,"
            " or events were reordered or inserted."
        )
    return ""


def _end_problem(head: str | None, head_seen: bool, count: int, last_id) -> str:
    """What is wrong with the end of the chain: the head row must name a walked event."""
    if head is None:
        return "the head row is missing: deleting the newest events cannot be ruled out." if count else ""
    if head_seen:
        return ""
    if last_id is None:
        return f"the trail is empty, but the head records hash {head}: its events were deleted."
    return (
        f"the trail ends at event {last_id}, but the head records hash {head}, which no event has: "
        f"the newest events, after event {last_id}, were deleted."
    )


def verify(*, chunk_size: int = CHUNK_SIZE, anchor: str = "") -> ChainCheck:
    """Check the whole trail, streaming it from the database chunk_size events at a time."""
    rows = in_chunks(AuditEvent.objects.all(), ("id", "chain", *HASHED_FIELDS, "hash"), chunk_size)
    return check_rows(rows, heads=heads(), anchor=anchor)


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
