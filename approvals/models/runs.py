"""Runs and their transcript, in the OpenAI chat format (the lingua franca of agents)."""

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..advancers import Advancer, advancer_for


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        WAITING = "waiting"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class AdvancedBy(models.TextChoices):
        LOCAL = "local", "ReviewHub's agent runtime"
        REMOTE = "remote", "An agent that runs elsewhere (the agent API)"
        AGUI = "agui", "An AG-UI agent that ReviewHub posts its input to (agui/)"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.WAITING)

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    agent = models.CharField(max_length=100)
    request = models.TextField()
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    step_count = models.PositiveIntegerField(default=0)
    max_steps = models.PositiveIntegerField(default=12)
    thinking = models.BooleanField(default=False)
    last_error = models.TextField(blank=True)
    dry_run = models.BooleanField(default=False)
    # Who takes the run further after a start or a decision: the local loop, a remote agent, an AG-UI agent.
    # The core never branches on it: it asks the run's advancer (approvals/advancers.py) what it does.
    advanced_by = models.CharField(max_length=8, choices=AdvancedBy.choices, default=AdvancedBy.LOCAL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"], name="run_status")]  # plain: no LIKE-prefix twin (calls.py)

    def __str__(self):
        return f"Run {self.pk} ({self.agent})"

    @property
    def advancer(self) -> Advancer:
        """Who advances this run, and what it does (approvals/advancers.py)."""
        return advancer_for(self.advanced_by)

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

    step_calls: list[Any]  # not a column: the calls services.step_store stored with this message, as written

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="messages", db_index=False)  # unique below
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    # A row a reviewer wrote (a model turn's reply or note), not the model: marked as theirs wherever it shows.
    written_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="message_unique_seq")]
        # The rows a reviewer wrote, only: the model's rows (nearly all) leave it empty.
        indexes = [
            models.Index(fields=["written_by"], condition=Q(written_by__isnull=False), name="message_written_by")
        ]

    @property
    def shown_in_transcript(self) -> bool:
        """The run page shows every row but the system prompt; a reviewer's note (a system row) it shows."""
        return self.role != self.Role.SYSTEM or self.written_by_id is not None

    def as_openai(self) -> dict:
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == self.Role.ASSISTANT and self.tool_calls:
            message["tool_calls"] = self.tool_calls
            message["content"] = self.content or None
        if self.role == self.Role.TOOL:
            message["tool_call_id"] = self.tool_call_id
        return message
