"""The system of record: runs, their transcript, tool calls, decisions, policy, audit.

This app knows nothing about language models. A run is a conversation in the
OpenAI chat format because that is the lingua franca of agents, not because
approvals/ calls a model.
"""

import hashlib
import json
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def args_hash(arguments) -> str:
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


def event_canonical(*, run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash) -> str:
    """What an audit event's hash covers: the canonical JSON of these eight fields.

    Anyone holding an export can recompute the hash; verify_audit walks the chain with it.
    """
    return canonical_json(
        {
            "run": run_id,
            "tool_call": tool_call_id,
            "kind": kind,
            "actor": actor_id,
            "actor_label": actor_label,
            "payload": payload,
            "created_at": created_at.isoformat(),
            "prev_hash": prev_hash,
        }
    )


def event_hash(**fields) -> str:
    return hashlib.sha256(event_canonical(**fields).encode()).hexdigest()


class Tier(models.TextChoices):
    READ_ONLY = "read_only", "Read-only"
    REVERSIBLE = "reversible", "Reversible"
    APPROVAL = "approval", "Approval required"
    FORBIDDEN = "forbidden", "Forbidden"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        WAITING = "waiting"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.WAITING)

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    agent = models.CharField(max_length=100)
    request = models.TextField()
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    step_count = models.PositiveIntegerField(default=0)
    max_steps = models.PositiveIntegerField(default=12)
    thinking = models.BooleanField(default=False)
    last_error = models.TextField(blank=True)
    dry_run = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Run {self.pk} ({self.agent})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    def open_step(self):
        """The last assistant message, if it asked for tools."""
        last = self.messages.filter(role=Message.Role.ASSISTANT).order_by("-seq").first()
        if last is not None and last.tool_calls:
            return last
        return None


class Message(models.Model):
    """One row of the transcript, in the OpenAI chat format. Append-only."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="message_unique_seq")]

    def as_openai(self) -> dict:
        message = {"role": self.role, "content": self.content}
        if self.role == self.Role.ASSISTANT and self.tool_calls:
            message["tool_calls"] = self.tool_calls
            message["content"] = self.content or None
        if self.role == self.Role.TOOL:
            message["tool_call_id"] = self.tool_call_id
        return message


class ToolCall(models.Model):
    class Status(models.TextChoices):
        INVALID = "invalid", "Invalid"
        FORBIDDEN = "forbidden", "Forbidden"
        PENDING = "pending", "Waiting for review"
        APPROVED = "approved", "Approved"
        EXECUTING = "executing", "Executing"
        EXECUTED = "executed", "Executed"
        FAILED = "failed", "Failed"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        CANCELLED = "cancelled", "Cancelled"
        UNDONE = "undone", "Undone"

    DECIDED = (Status.APPROVED, Status.EXECUTING, Status.EXECUTED, Status.FAILED, Status.REJECTED, Status.EXPIRED)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="calls")
    call_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200, db_index=True)
    arguments = models.JSONField(null=True, blank=True)
    raw_arguments = models.TextField(blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True)
    tier = models.CharField(max_length=16, choices=Tier.choices, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, db_index=True)
    policy = models.JSONField(default=dict, blank=True)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    description = models.TextField(blank=True)
    facts = models.JSONField(default=dict, blank=True)
    reasoning = models.TextField(blank=True)
    user_request = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    approved_arguments = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True)
    output_recorded = models.BooleanField(default=False)
    claimed_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "call_id"], name="toolcall_unique_call_id")]
        permissions = [("review_toolcall", "Can review (approve, edit, reject) tool calls")]

    def __str__(self):
        return f"{self.tool_name} #{self.pk}"

    @property
    def idempotency_key(self) -> str:
        return f"run-{self.run.public_id}-call-{self.pk}"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def pretty_arguments(self) -> str:
        if self.arguments is None:
            return self.raw_arguments
        return json.dumps(self.arguments, indent=2, ensure_ascii=False, sort_keys=True)

    def time_left(self):
        if self.expires_at is None:
            return None
        return max(self.expires_at - timezone.now(), timedelta(0))

    def final_decision(self):
        return self.decisions.filter(final=True).select_related("reviewer").first()


class Decision(models.Model):
    class Verdict(models.TextChoices):
        APPROVE = "approve", "Approved"
        EDIT = "edit", "Edited and approved"
        REJECT = "reject", "Rejected"
        EXPIRE = "expire", "Expired"

    tool_call = models.ForeignKey(ToolCall, on_delete=models.PROTECT, related_name="decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    arguments = models.JSONField(null=True, blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    final = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tool_call"], condition=Q(final=True), name="decision_one_final"),
            models.UniqueConstraint(
                fields=["tool_call", "reviewer"], condition=Q(reviewer__isnull=False), name="decision_one_per_reviewer"
            ),
        ]

    @property
    def reviewer_label(self) -> str:
        return self.reviewer.get_username() if self.reviewer else "system"


class PolicyRule(models.Model):
    """A rule as data: for a tool, a condition on one argument, and an outcome.

    Rules are evaluated in order; the first enabled rule whose condition holds
    decides. Without a matching rule, the tool's tier decides.
    """

    class Outcome(models.TextChoices):
        RUN = "run", "Run without review"
        REVIEW = "review", "Require review"
        FORBID = "forbid", "Forbid"

    class Operator(models.TextChoices):
        LE = "<=", "<="
        LT = "<", "<"
        GE = ">=", ">="
        GT = ">", ">"
        EQ = "==", "=="
        NE = "!=", "!="
        ANY = "any", "always"

    name = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200, help_text="Tool this rule applies to.")
    field = models.CharField(max_length=100, blank=True, help_text="Argument name, e.g. amount.")
    operator = models.CharField(max_length=8, choices=Operator.choices, default=Operator.ANY)
    value = models.JSONField(null=True, blank=True, help_text="JSON value to compare with, e.g. 20.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    order = models.PositiveIntegerField(default=100)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["order", "id"]

    def __str__(self):
        return self.name

    def describe(self) -> str:
        if self.operator == self.Operator.ANY:
            return f"{self.tool_name}: always {self.get_outcome_display().lower()}"
        return f"{self.tool_name}: {self.field} {self.operator} {self.value} → {self.get_outcome_display().lower()}"


HASHED_FIELDS = ("run_id", "tool_call_id", "kind", "actor_id", "actor_label", "payload", "created_at", "prev_hash")
GENESIS_HASH = "0" * 64


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

    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    actor_label = models.CharField(max_length=150)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["id"]

    def canonical(self) -> str:
        return event_canonical(**{name: getattr(self, name) for name in HASHED_FIELDS})

    def compute_hash(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    @property
    def hash_matches(self) -> bool:
        return self.compute_hash() == self.hash


class AuditHead(models.Model):
    """A single row holding the chain's last hash; locked to append in order."""

    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)
