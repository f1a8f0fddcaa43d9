"""Anchoring: the heads of the run chains, written into the global chain now and then.

A run's chain proves that none of its events was changed, removed or reordered; its head row proves
that its newest events were not cut off. But someone with write access to the database who rewrites a
whole run, every event from some point and its head row, leaves a chain consistent with itself.
anchor_heads() (Celery beat, every AUDIT_ANCHOR_SECONDS) appends to the global chain an `anchor` event
naming, for each run chain that grew since it was last anchored, its length and newest hash. verify()
then checks each anchored (chain, seq, hash) against the chain it recomputes: a rewritten run no longer
has the anchored hash at the anchored position, and is named. docs/audit.md says what this proves.
"""

from dataclasses import dataclass, field

from django.db import transaction

from . import audit
from .models import GLOBAL_CHAIN, AuditEvent, AuditHead

MAX_HEADS = 500  # heads per anchor event: its payload stays near 50 KB
MAX_EVENTS = 20  # anchor events per pass; heads left over wait for the next pass


def anchor_heads(*, max_heads: int = MAX_HEADS, max_events: int = MAX_EVENTS) -> int:
    """Anchor every run chain that changed since its last anchor (none: nothing is written). How many."""
    anchored = 0
    for _ in range(max_events):
        count = _anchor_once(max_heads)
        anchored += count
        if count < max_heads:
            break
    return anchored


@transaction.atomic
def _anchor_once(limit: int) -> int:
    """One anchor event for at most `limit` changed chains, and those chains marked as anchored."""
    # The global head first, then the changed heads without waiting (SKIP LOCKED): a writer holding a run's
    # head never waits for the anchor while the anchor waits for it. A head being written now is anchored next time.
    audit.locked_head(GLOBAL_CHAIN)
    changed = list(
        AuditHead.objects.select_for_update(skip_locked=True)
        .filter(anchored=False)
        .exclude(chain=GLOBAL_CHAIN)
        .order_by("chain")
        .values_list("pk", "chain", "seq", "last_hash")[:limit]
    )
    if not changed:
        return 0
    heads = {str(chain): {"seq": seq, "hash": last_hash} for _, chain, seq, last_hash in changed}
    audit.record(AuditEvent.Kind.ANCHOR, actor_label="system", payload={"heads": heads})
    AuditHead.objects.filter(pk__in=[pk for pk, *_ in changed]).update(anchored=True)
    return len(changed)


# --- verification --------------------------------------------------------------------------


@dataclass
class Anchored:
    """What the anchors read before a walk say: chain -> {seq: (hash, anchor event id)}."""

    expected: dict[int, dict[int, tuple[str, int]]] = field(default_factory=dict)

    @classmethod
    def read(cls, chunk_size: int = audit.CHUNK_SIZE) -> "Anchored":
        anchors = AuditEvent.objects.filter(kind=AuditEvent.Kind.ANCHOR, chain=GLOBAL_CHAIN)
        anchored = cls()
        for event_id, payload in audit.in_chunks(anchors, ("id", "payload"), chunk_size):
            for chain, head in (payload.get("heads") or {}).items():
                if str(chain).isdigit() and isinstance(head, dict):
                    anchored.expected.setdefault(int(chain), {})[head.get("seq")] = (head.get("hash"), event_id)
        return anchored

    def __len__(self) -> int:
        return sum(len(seqs) for seqs in self.expected.values())

    def problem_at(self, chain: int, seq: int, stored_hash: str) -> str:
        """Whether the chain's event number `seq` (from 1) is what the anchors recorded there."""
        wanted = self.expected.get(chain, {}).pop(seq, None)
        if wanted is None or wanted[0] == stored_hash:
            return ""
        return (
            f"run {chain} was rewritten: its event {seq} has hash {stored_hash}, but anchor event {wanted[1]}"
            f" recorded {wanted[0]}."
        )

    def missing(self) -> str:
        """The first anchored position no chain reached: a run cut short or deleted, head and all."""
        for chain, seqs in sorted(self.expected.items()):
            for seq, (wanted, anchor_id) in sorted(seqs.items(), key=lambda item: str(item[0])):
                return (
                    f"run {chain} was rewritten: anchor event {anchor_id} recorded its event {seq} with hash"
                    f" {wanted}, but the chain has fewer events now."
                )
        return ""
