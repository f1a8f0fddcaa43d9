"""The audit trail: append-only events chained by hash, and the head of the chain."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from approvals.lib.hashing import event_canonical, sha256_hex

from .calls import ToolCall
from .runs import Run

HASHED_FIELDS = ("run_id", "tool_call_id", "kind", "actor_id", "actor_label", "payload", "created_at", "prev_hash")
GENESIS_HASH = "0" * 64
GLOBAL_CHAIN = 0  # events without a run, anchors, and every event recorded before chains were per run
# The kinds nearly every event has (a run's and a call's ordinary steps): not in the rare kinds' index.
ROUTINE_KINDS = (
    "run_started",
    "proposed",
    "auto_run",
    "decided",
    "review_claimed",
    "review_released",
    "executing",
    "executed",
    "resumed",
    "completed",
)


class AuditEvent(models.Model):
    """One append-only step of the trail; each event hashes its predecessor.

    On PostgreSQL a trigger refuses UPDATE and DELETE on this table (migration 0003).
    """

    class Kind(models.TextChoices):
        RUN_STARTED = "run_started"
        PROPOSED = "proposed"
        AUTO_RUN = "auto_run"
        INVALID = "invalid"
        FORBIDDEN = "forbidden"
        DECIDED = "decided"
        EXECUTING = "executing"
        EXECUTED = "executed"
        FAILED = "failed"
        EXPIRED = "expired"
        RESUMED = "resumed"
        COMPLETED = "completed"
        RUN_FAILED = "run_failed"
        CANCELLED = "cancelled"
        UNDONE = "undone"
        REVIEW_CLAIMED = "review_claimed"
        REVIEW_RELEASED = "review_released"
        DEADLINE_NEAR = "deadline_near"
        ESCALATED = "escalated"
        RETURNED = "returned"
        UNREPORTED = "unreported"
        NOT_CLAIMED = "not_claimed"  # a remote agent read the approval and did not claim it (remote/unclaimed.py)
        LEASE_LAPSED = "lease_lapsed"  # an idempotent call's claim lapsed: released to be claimed again
        OUTCOME_UNKNOWN = "outcome_unknown"
        OUTCOME_SETTLED = "outcome_settled"
        ANCHOR = "anchor"  # the heads of the run chains that changed, written into the global chain
        # Practice calls (practice/): planted, in the global chain (the call's own trail must not tell it apart
        # before it is decided), and scored, on the call once decided.
        PRACTICE_PLANTED = "practice_planted"
        PRACTICE_SCORED = "practice_scored"

    # No foreign-key constraints in the database for the run and the call (db_constraint=False): each check
    # locked the run's and the call's row (FOR KEY SHARE, at commit), which writes to that row and waits for
    # anyone holding it FOR UPDATE (a decision, the loop's step), for about 40 us of PostgreSQL's CPU per event
    # (bench/README.md). What they gave still holds: an event names the run and call it was recorded for, rows
    # that this transaction created or read (approvals/audit); PROTECT still refuses deleting them through the
    # ORM, the admin deletes no run or call, no code deletes either (no retention or purge), and on PostgreSQL a
    # trigger refuses deleting a run or a call that an event names (migration 0019), as the constraint did.
    # The run has no index of its own (db_index=False): its events are its chain, below.
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="audit_events",
        db_constraint=False,
        db_index=False,
    )
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events", db_constraint=False
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, db_index=False)
    actor_label = models.CharField(max_length=150)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    prev_hash = models.CharField(max_length=64)
    # Not indexed: a hash is random, so each insert would write a random page of its index (after each checkpoint,
    # a full page of WAL). An event's predecessor is found by its chain's order, (chain, id), below.
    hash = models.CharField(max_length=64)
    # Which chain the event extends: its run's id, or GLOBAL_CHAIN. Not hashed: an event moved to
    # another chain no longer follows the events of either.
    chain = models.PositiveBigIntegerField(default=GLOBAL_CHAIN)

    class Meta:
        ordering = ["id"]
        # Every index is written by every event it covers: PostgreSQL CPU and WAL on the trail's hot path
        # (bench/README.md, "Audit events: index entries per event"; bench/audit_plans.py shows which query uses
        # which). An event writes four: its primary key, (chain, id), created_at and tool_call_id (the foreign
        # key's default index; NULL for the run's own events, appended at the index's end like created_at), and
        # the partial indexes below only for the few events they cover; run_id and kind have none of their own.
        indexes = [
            # The event before another in its chain (audit.before_in_chain), and a run's events: a run's chain is
            # its id (audit.of_run), so (chain, id) is the run's index too and run_id needs none of its own.
            models.Index(fields=["chain", "id"], name="auditevent_chain_order"),
            # A run's events recorded before chains were per run, which stayed in the global chain (audit.of_run).
            models.Index(
                fields=["run"], condition=Q(chain=GLOBAL_CHAIN, run__isnull=False), name="auditevent_global_run"
            ),
            # Events a person caused: most are the system's, which leave actor empty.
            models.Index(fields=["actor"], condition=Q(actor__isnull=False), name="auditevent_actor"),
            # The admin's filter on a rare kind, newest first (an anchor, a flag), and the flags' lookups: the
            # routine kinds, nearly all events, write no entry; a filter on one of them walks created_at's index
            # newest first and meets one soon.
            models.Index(
                fields=["kind", "created_at"], condition=~Q(kind__in=ROUTINE_KINDS), name="auditevent_rare_kind"
            ),
            # When each reviewer opened each call: the insight page's time to approve reads only this.
            models.Index(
                fields=["tool_call", "actor", "created_at"],
                condition=Q(kind="review_claimed"),
                name="auditevent_claims",
            ),
        ]

    def canonical(self) -> str:
        return event_canonical(**{name: getattr(self, name) for name in HASHED_FIELDS})

    def compute_hash(self) -> str:
        return sha256_hex(self.canonical())

    @property
    def hash_matches(self) -> bool:
        return self.compute_hash() == self.hash


class AuditHead(models.Model):
    """The last hash of one chain (a run's, or the global one); locked to append to that chain in order.

    `seq` counts the chain's events; `anchored` says whether the chain was anchored as it is now
    (approvals/audit/anchors.py): a small partial index finds the chains that changed since. Appending sets it
    to false, which changes the indexed value only on the first append after an anchor, so the other
    appends stay HOT updates (no new index entries).
    """

    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    chain = models.PositiveBigIntegerField(default=GLOBAL_CHAIN, unique=True)
    seq = models.PositiveBigIntegerField(default=0)
    anchored = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["chain"], condition=Q(anchored=False), name="audithead_unanchored"),
        ]
