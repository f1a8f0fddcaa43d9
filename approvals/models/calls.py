"""Tool calls and the decisions on them."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Prefetch, Q
from django.utils import timezone

from approvals.lib.hashing import args_hash
from approvals.lib.text import arguments_diff, pretty_json, visible

from ..tiers import Tier
from .runs import Message, Run


def facts_warning(facts: dict | None) -> str:
    """The "warning" a tool's facts carry against running a call ("" when none)."""
    return str((facts or {}).get("warning") or "")


class ToolCall(models.Model):
    """Something an agent waits on a person for. Most are tool calls; the other pause points take the same
    path (one decision bound to what was shown, exactly-once resumption, the trail, the queue):

    - a model turn held before the model answers (`kind` turn: continue, add a note, or write the reply);
    - a checkpoint at a named stage of the agent's work (`kind` checkpoint: approve, edit or send back a draft);
    - a question a tool asks mid-run (`kind` question: the answer, checked against `question["schema"]`,
      becomes the tool's output).
    """

    class Kind(models.TextChoices):
        CALL = "call", "Tool call"
        TURN = "turn", "Model turn"
        CHECKPOINT = "checkpoint", "Checkpoint"
        QUESTION = "question", "Question"

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
        # Its execution's lease lapsed without a report and the tool is not idempotent: a person says what happened.
        OUTCOME_UNKNOWN = "outcome_unknown", "Outcome unknown"

    # Approved and not yet reported: to be executed, or executing under a lease (which may lapse and be claimed
    # again). Every executor (the local runtime, a remote agent, the gateway, an AG-UI agent) waits on these.
    RUNNABLE = (Status.APPROVED, Status.EXECUTING)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls", db_index=False)  # unique below
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="calls")
    CALL_ID_LENGTH = TOOL_NAME_LENGTH = 200  # what the gate can store (longer ones are refused, cut short)
    call_id = models.CharField(max_length=CALL_ID_LENGTH)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CALL)
    # A tool that asks: {"prompt": str, "schema": JSON schema of the answer, "payload": what to show}.
    question = models.JSONField(default=dict, blank=True)
    # Revision rounds: the earlier proposal of the same tool (or the same checkpoint) in this run that a reviewer
    # rejected or sent back, and which revision this is (1 for a first proposal).
    revision_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="revisions", db_index=False
    )
    revision = models.PositiveSmallIntegerField(default=1)
    tool_name = models.CharField(max_length=TOOL_NAME_LENGTH)
    arguments = models.JSONField(null=True, blank=True)
    raw_arguments = models.TextField(blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True)
    tier = models.CharField(max_length=16, choices=Tier.choices, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    policy = models.JSONField(default=dict, blank=True)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    description = models.TextField(blank=True)
    # After a reviewer's edit: the description of the edited call (description stays the model's proposal).
    edited_description = models.TextField(blank=True)
    facts = models.JSONField(default=dict, blank=True)
    # Facts a remote agent's own code fetched and sent with its proposal: shown as the agent's, apart from ours.
    agent_facts = models.JSONField(default=dict, blank=True)
    reasoning = models.TextField(blank=True)
    user_request = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # While pending: a reviewer's edit that others are asked to approve (N-of-M); once approved: what runs.
    approved_arguments = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True)
    output_recorded = models.BooleanField(default=False)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # While executing: the claim holds until then, renewed by its claimer while the body runs (services/leases.py).
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Who may decide: members of this group only (empty: any reviewer). Set by policy, changed by escalation.
    review_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    # A call returned to the queue (facts changed, policy changed) is reviewed again in a new round.
    review_round = models.PositiveSmallIntegerField(default=1)
    returned_reason = models.TextField(blank=True)
    changed_facts = models.JSONField(default=dict, blank=True)
    # "Being reviewed by X": a hint for other reviewers, never a lock.
    reviewing_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    reviewing_until = models.DateTimeField(null=True, blank=True)
    warn_at = models.DateTimeField(null=True, blank=True)
    warned_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # Set for the templates on the calls a page lists, never stored: the key fields as shown
    # (selectors.with_key_values) and whether the viewer may undo the call (the run page).
    key_values: list[tuple[str, object]]
    viewer_can_undo: bool

    # Not columns: the decisions a queryset loaded (decisions_prefetch(), or [] for a call just stored), and the
    # tool the gate admitted a call under (registry.for_call answers with it, for the call as the gate left it).
    loaded_decisions: list["Decision"]
    resolved_tool: Any

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "call_id"], name="toolcall_unique_call_id")]
        indexes = [
            # Plain indexes: db_index on a CharField adds a second, LIKE-prefix one on PostgreSQL that no query
            # uses, and that every change of status (each call changes it 2-4 times) wrote to as well.
            models.Index(fields=["tool_name"], name="toolcall_tool_name"),
            models.Index(fields=["status"], name="toolcall_status"),
            # The queue's orders, pending calls only (approvals/selectors.py).
            models.Index(fields=["created_at", "id"], condition=Q(status="pending"), name="toolcall_pending_oldest"),
            models.Index(
                fields=["expires_at", "created_at", "id"],
                condition=Q(status="pending"),
                name="toolcall_pending_deadline",
            ),
            # Columns most calls leave empty (a read-only call runs at once: no deadline, group or reviewer):
            # indexed where set only, so that inserting such a call writes none of these indexes.
            *(
                models.Index(fields=[name], condition=Q(**{f"{name}__isnull": False}), name=f"toolcall_{name}")
                for name in ("expires_at", "warn_at", "review_group", "reviewing_by", "revision_of")
            ),
        ]
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
    def review_draft(self) -> str:
        """A checkpoint's draft under review (its `draft` argument)."""
        return (self.review_arguments or {}).get("draft", "")

    @property
    def draft_companions(self) -> list[tuple[str, object]]:
        """A checkpoint's other arguments under review (not the draft, not empty): its edit form keeps them."""
        arguments = self.review_arguments or {}
        return [(name, value) for name, value in arguments.items() if name != "draft" and value is not None]

    @property
    def review_hash(self) -> str:
        """The hash a decision must be bound to (of a question: the question shown)."""
        if self.kind == self.Kind.QUESTION:
            return args_hash(self.question)
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
        if self.kind == self.Kind.QUESTION:
            return f"Question: {self.question.get('prompt', '')}"
        return self.edited_description or self.description

    @property
    def policy_verdict(self) -> str:
        """What policy decided when no person did ("" when a person decides): "Ran without review (rule …)"."""
        policy = self.policy if isinstance(self.policy, dict) else {}
        said = {"run": "Ran without review", "forbid": "Refused by policy"}.get(policy.get("action", ""))
        return f"{said} ({policy.get('reason') or 'its tier'})" if said else ""

    @property
    def warning(self) -> str:
        """What the facts fetched by code say against running this call as it stands ("" when nothing)."""
        return facts_warning(self.facts)

    @property
    def fact_rows(self) -> list[dict]:
        """The facts for display. While the call waits, a fact that changed since it was last reviewed is marked
        (`changed`, with the value it `was`); `css` is its class on the card (warning, changed)."""
        changed = self.changed_facts or {} if self.is_pending else {}
        rows = []
        for key, value in (self.facts or {}).items():
            marked = key in changed
            css = ("warning" if key == "warning" else "") + (" changed" if marked else "")
            was = (changed.get(key) or {}).get("before") or "—"
            rows.append({"key": key, "value": value, "changed": marked, "was": was, "css": css})
        return rows

    @property
    def back_in_queue(self) -> bool:
        """Returned to the queue (its facts or policy changed after approval) and waiting again: the card says why."""
        return self.is_pending and bool(self.returned_reason)

    @property
    def collects_approvals(self) -> bool:
        """Waiting for the approvals of several distinct reviewers (N-of-M)."""
        return self.is_pending and self.required_approvals > 1

    @property
    def approval_progress(self) -> str:
        """Where the approvals of this round stand, e.g. "1 of 2 approvals: alice"."""
        names = [d.reviewer_label for d in self.round_approvals()]
        progress = f"{len(names)} of {self.required_approvals} approvals"
        return f"{progress}: {', '.join(names)}" if names else progress

    @property
    def output_reported_by_agent(self) -> bool:
        """The output is what the run's agent reported (it executed the call), not what ReviewHub ran."""
        reported = bool(self.output) and self.status in (self.Status.EXECUTED, self.Status.FAILED)
        return reported and not self.run.advancer.executes(self)

    @property
    def facts_from_agent(self) -> bool:
        """The facts are what the agent's own code fetched (shown as the agent's), not what a tool's code fetched."""
        return self.run.advancer.agent_facts

    @property
    def report_overdue(self) -> bool:
        """Flagged as never reported (services.unreported_flag; annotated `flagged_unreported` by the run page),
        and still approved or executing."""
        return getattr(self, "flagged_unreported", False) and self.status in self.RUNNABLE

    @property
    def reviewer_now(self):
        """Who is reviewing this pending call now (None once it is decided, or when nobody said so)."""
        return self.current_reviewer if self.is_pending else None

    @property
    def current_reviewer(self):
        """Who said they are looking at this call, while that still holds."""
        if self.reviewing_by_id and self.reviewing_until and self.reviewing_until > timezone.now():
            return self.reviewing_by
        return None

    @staticmethod
    def decisions_prefetch() -> Prefetch:
        """For a queryset's prefetch_related(): every call's decisions with their reviewers, read in one statement
        for all the calls, as the list `loaded_decisions` that the methods below read instead of a query each."""
        return Prefetch("decisions", queryset=Decision.objects.select_related("reviewer"), to_attr="loaded_decisions")

    def _loaded_decisions(self) -> list["Decision"] | None:
        """The call's decisions if its queryset loaded them (decisions_prefetch()), else None (each method reads)."""
        return getattr(self, "loaded_decisions", None)

    def all_decisions(self) -> list["Decision"]:
        """The call's decisions, oldest first."""
        loaded = self._loaded_decisions()
        return loaded if loaded is not None else list(self.decisions.all())

    def final_decision(self):
        prefetched = self._loaded_decisions()
        if prefetched is not None:
            return max((d for d in prefetched if d.final), key=lambda d: d.pk, default=None)
        return self.decisions.filter(final=True).select_related("reviewer").order_by("-id").first()

    def round_approvals(self, arguments_hash: str | None = None) -> list["Decision"]:
        """Approvals in this review round of exactly these arguments (by default, those now under review)."""
        wanted = arguments_hash or self.review_hash
        prefetched = self._loaded_decisions()
        if prefetched is not None:
            return [
                d
                for d in prefetched
                if d.round == self.review_round and d.verdict in Decision.APPROVING and d.arguments_hash == wanted
            ]
        return list(
            self.decisions.filter(
                round=self.review_round, verdict__in=Decision.APPROVING, arguments_hash=wanted
            ).select_related("reviewer")
        )


class Decision(models.Model):
    class Verdict(models.TextChoices):
        APPROVE = "approve", "Approved"
        EDIT = "edit", "Edited and approved"
        REJECT = "reject", "Rejected"
        EXPIRE = "expire", "Expired"
        NOTE = "note", "Continued with a note"  # a model turn: the model reads the note before answering
        REPLY = "reply", "Replied by the reviewer"  # a model turn: the reviewer's text is the assistant's reply
        ANSWER = "answer", "Answered"  # a tool's question: the answer is the tool's output

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

    def label_for(self, kind: str) -> str:
        """The verdict as the card of that kind of pause names it: a turn is "Continued", a draft "Sent back"."""
        return KIND_VERDICTS.get((kind, self.verdict)) or self.get_verdict_display()


KIND_VERDICTS: dict[tuple[str, str], str] = {
    (ToolCall.Kind.TURN, Decision.Verdict.APPROVE): "Continued",
    (ToolCall.Kind.CHECKPOINT, Decision.Verdict.REJECT): "Sent back",
    (ToolCall.Kind.QUESTION, Decision.Verdict.REJECT): "Declined",
}
