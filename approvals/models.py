"""The system of record: runs, their transcript, tool calls, decisions, policy, audit.

This app knows nothing about language models. A run is a conversation in the
OpenAI chat format because that is the lingua franca of agents, not because
approvals/ calls a model.
"""

import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Q
from django.utils import timezone

from .hashing import args_hash, event_canonical, sha256_hex
from .text import arguments_diff, pretty_json, visible


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
    # After a reviewer's edit: the description of the edited call (description stays the model's proposal).
    edited_description = models.TextField(blank=True)
    facts = models.JSONField(default=dict, blank=True)
    reasoning = models.TextField(blank=True)
    user_request = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # While pending: a reviewer's edit that others are asked to approve (N-of-M); once approved: what runs.
    approved_arguments = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True)
    output_recorded = models.BooleanField(default=False)
    claimed_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Who may decide: members of this group only (empty: any reviewer). Set by policy, changed by escalation.
    review_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # A call returned to the queue (facts changed, policy changed) is reviewed again in a new round.
    review_round = models.PositiveSmallIntegerField(default=1)
    returned_reason = models.TextField(blank=True)
    changed_facts = models.JSONField(default=dict, blank=True)
    # "Being reviewed by X": a hint for other reviewers, never a lock.
    reviewing_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewing_until = models.DateTimeField(null=True, blank=True)
    warn_at = models.DateTimeField(null=True, blank=True, db_index=True)
    warned_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "call_id"], name="toolcall_unique_call_id")]
        permissions = [("review_toolcall", "Can review (approve, edit, reject) tool calls")]

    def __str__(self):
        return f"{visible(self.tool_name)} #{self.pk}"  # the model names tools: its hidden characters show

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
        return pretty_json(self.arguments)

    def time_left(self):
        if self.expires_at is None:
            return None
        return max(self.expires_at - timezone.now(), timedelta(0))

    @property
    def near_deadline(self) -> bool:
        return self.is_pending and self.warn_at is not None and self.warn_at <= timezone.now()

    @property
    def review_arguments(self):
        """The arguments reviewers are asked about: the model's, or an edit already approved by someone."""
        return self.approved_arguments if self.approved_arguments is not None else self.arguments

    @property
    def review_hash(self) -> str:
        """The hash a decision must be bound to."""
        if self.approved_arguments is None:
            return self.arguments_hash
        return args_hash(self.approved_arguments)

    @property
    def pretty_review_arguments(self) -> str:
        return pretty_json(self.review_arguments)

    @property
    def changes(self) -> list[dict]:
        """How a reviewer's edit differs from what the model proposed."""
        if self.arguments is None or self.approved_arguments is None:
            return []
        return arguments_diff(self.arguments, self.approved_arguments)

    @property
    def current_description(self) -> str:
        return self.edited_description or self.description

    @property
    def warning(self) -> str:
        """What the facts fetched by code say against running this call as it stands ("" when nothing)."""
        return str((self.facts or {}).get("warning") or "")

    @property
    def fact_rows(self) -> list[dict]:
        """The facts for display, each marked if it changed since the call was last reviewed."""
        changed = self.changed_facts or {}
        return [
            {"key": key, "value": value, "changed": key in changed, "before": (changed.get(key) or {}).get("before")}
            for key, value in (self.facts or {}).items()
        ]

    @property
    def current_reviewer(self):
        """Who said they are looking at this call, while that still holds."""
        if self.reviewing_by_id and self.reviewing_until and self.reviewing_until > timezone.now():
            return self.reviewing_by
        return None

    def final_decision(self):
        return self.decisions.filter(final=True).select_related("reviewer").order_by("-id").first()

    def round_approvals(self, arguments_hash: str | None = None) -> list["Decision"]:
        """Approvals in this review round of exactly these arguments (by default, those now under review)."""
        return list(
            self.decisions.filter(
                round=self.review_round,
                verdict__in=Decision.APPROVING,
                arguments_hash=arguments_hash or self.review_hash,
            ).select_related("reviewer")
        )


class Decision(models.Model):
    class Verdict(models.TextChoices):
        APPROVE = "approve", "Approved"
        EDIT = "edit", "Edited and approved"
        REJECT = "reject", "Rejected"
        EXPIRE = "expire", "Expired"

    APPROVING = (Verdict.APPROVE, Verdict.EDIT)

    tool_call = models.ForeignKey(ToolCall, on_delete=models.PROTECT, related_name="decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    arguments = models.JSONField(null=True, blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    # What the reviewer tells the agent to do instead; the model reads it after the step's tool outputs.
    guidance = models.TextField(blank=True)
    # The decision that settled the call (for N approvals: the Nth). One per review round.
    final = models.BooleanField(default=True)
    round = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tool_call", "round"], condition=Q(final=True), name="decision_one_final"),
            models.UniqueConstraint(
                fields=["tool_call", "round", "reviewer"],
                condition=Q(reviewer__isnull=False),
                name="decision_one_per_reviewer",
            ),
        ]

    @property
    def reviewer_label(self) -> str:
        return self.reviewer.get_username() if self.reviewer else "system"


class PolicyRule(models.Model):
    """A rule as data: for a tool, a condition on one argument, and an outcome.

    Rules are evaluated in order; the first enabled rule whose condition holds
    decides. Without a matching rule, the tool's tier decides. A shadow rule
    never decides: it records what it would have decided, next to what people did.
    """

    class Outcome(models.TextChoices):
        RUN = "run", "Run without review"
        REVIEW = "review", "Require review (by N distinct reviewers)"
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
    required_approvals = models.PositiveSmallIntegerField(
        default=1, help_text="For “require review”: how many different reviewers must approve."
    )
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="For “require review”: only members of this group may decide matching calls.",
    )
    order = models.PositiveIntegerField(default=100)
    enabled = models.BooleanField(default=True)
    shadow = models.BooleanField(
        default=False,
        help_text="Shadow mode: never decides; records what it would have decided next to the human decision.",
    )

    class Meta:
        ordering = ["order", "id"]

    def __str__(self):
        return self.name

    def clean(self):
        if self.operator != self.Operator.ANY and not self.field:
            raise ValidationError({"field": "Name the argument this condition compares."})
        if self.outcome != self.Outcome.REVIEW and (self.required_approvals != 1 or self.group_id):
            raise ValidationError("Approvals and a group only apply to the outcome “require review”.")
        if self.required_approvals < 1:
            raise ValidationError({"required_approvals": "At least one approval."})

    def shadow_summary(self) -> str:
        """How often this rule, in shadow mode, agreed with the people who decided."""
        stats = self.shadow_results.aggregate(
            matched=Count("id"),
            compared=Count("id", filter=Q(agreed__isnull=False)),
            agreed=Count("id", filter=Q(agreed=True)),
        )
        if not stats["matched"]:
            return "no calls matched yet"
        if not stats["compared"]:
            return f"matched {stats['matched']} call(s); none decided by a person yet"
        percent = round(100 * stats["agreed"] / stats["compared"])
        agreed = f"agreed {stats['agreed']} of {stats['compared']} decisions ({percent}%)"
        return f"{agreed}; matched {stats['matched']} call(s)"

    def describe(self) -> str:
        outcome = self.get_outcome_display().lower()
        if self.outcome == self.Outcome.REVIEW:
            outcome = "require " + (f"{self.required_approvals} approvals" if self.required_approvals > 1 else "review")
            if self.group_id:
                outcome += f" by “{self.group.name}”"
        if self.operator == self.Operator.ANY:
            return f"{self.tool_name}: always {outcome}"
        return f"{self.tool_name}: {self.field} {self.operator} {self.value} → {outcome}"


class ToolSetting(models.Model):
    """How one tool's calls are reviewed: by whom, how long they may wait, and what happens then."""

    class OnExpiry(models.TextChoices):
        REJECT = "reject", "Reject"
        ESCALATE = "escalate", "Escalate to a group (once), then reject"

    tool_name = models.CharField(max_length=200, unique=True)
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Only members of this group may decide this tool's calls. Empty: any reviewer.",
    )
    timeout_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="How long a call may wait for a decision. Empty: the site default."
    )
    warn_minutes = models.PositiveIntegerField(
        default=10, help_text="Flag the call in the queue and notify its reviewers this long before the deadline."
    )
    on_expiry = models.CharField(max_length=16, choices=OnExpiry.choices, default=OnExpiry.REJECT)
    escalate_to = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["tool_name"]

    def __str__(self):
        return self.tool_name

    def clean(self):
        if self.on_expiry == self.OnExpiry.ESCALATE and not self.escalate_to_id:
            raise ValidationError({"escalate_to": "Name the group that overdue calls go to."})

    @classmethod
    def for_tool(cls, tool_name: str) -> "ToolSetting":
        """The stored setting, or the defaults (any reviewer, the site's time limit, reject)."""
        return cls.objects.filter(tool_name=tool_name).select_related("group", "escalate_to").first() or cls(
            tool_name=tool_name
        )

    def timeout(self) -> timedelta:
        if self.timeout_minutes:
            return timedelta(minutes=self.timeout_minutes)
        return timedelta(seconds=settings.REVIEW_EXPIRY_SECONDS)

    def warn_before(self) -> timedelta:
        return min(timedelta(minutes=self.warn_minutes), self.timeout() / 2)

    @property
    def escalates(self) -> bool:
        return self.on_expiry == self.OnExpiry.ESCALATE and self.escalate_to_id is not None


class ShadowResult(models.Model):
    """What a shadow rule would have decided on one call, and what people decided."""

    rule = models.ForeignKey(PolicyRule, on_delete=models.CASCADE, related_name="shadow_results")
    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="shadow_results")
    outcome = models.CharField(max_length=16, choices=PolicyRule.Outcome.choices)
    verdict = models.CharField(max_length=16, choices=Decision.Verdict.choices, blank=True)
    # Run agrees with an approval as proposed, forbid with a reject; anything else is not compared.
    agreed = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["rule", "tool_call"], name="shadow_one_per_rule_and_call")]

    @staticmethod
    def agreement(outcome: str, verdict: str) -> bool | None:
        if verdict == Decision.Verdict.EXPIRE or outcome == PolicyRule.Outcome.REVIEW:
            return None
        if outcome == PolicyRule.Outcome.RUN:
            return verdict == Decision.Verdict.APPROVE
        return verdict == Decision.Verdict.REJECT


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
        REVIEW_CLAIMED = "review_claimed"
        REVIEW_RELEASED = "review_released"
        DEADLINE_NEAR = "deadline_near"
        ESCALATED = "escalated"
        RETURNED = "returned"

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
        indexes = [
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
    """A single row holding the chain's last hash; locked to append in order."""

    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)
