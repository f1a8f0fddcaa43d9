"""Anchoring: the heads of the run chains, written into the global chain now and then.

A run's chain proves that none of its events was changed, removed or reordered; its head row proves
that its newest events were not cut off. But someone with write access to the database who rewrites a
whole run, every event from some point and its head row, leaves a chain consistent with itself.
anchor_heads() (Celery beat, every AUDIT_ANCHOR_SECONDS) appends to the global chain an `anchor` event
naming, for each run chain that grew since it was last anchored, its length and newest hash. verify()
(audit.check_rows) checks each anchor, when its walk reaches it, against the chains it has recomputed up
to there: a rewritten run no longer has the anchored length and hash, and is named. docs/audit.md says
what this proves.
"""

from django.db import transaction

from approvals import audit
from approvals.audit import store as audit_store
from approvals.models import GLOBAL_CHAIN, AuditEvent, AuditHead

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
    audit_store.lock_head(GLOBAL_CHAIN)
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
