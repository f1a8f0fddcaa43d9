"""verify(): the whole trail walked in id order, each event against its hash and the one before it in its chain,
every chain's end against its head row, every anchor against the run chains it names (approvals/audit: the
package re-exports what is here)."""

from collections.abc import Iterator
from dataclasses import dataclass

from approvals.lib.hashing import event_hash
from approvals.models import GENESIS_HASH, GLOBAL_CHAIN, HASHED_FIELDS, AuditEvent, AuditHead

CHUNK_SIZE = 5000


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
