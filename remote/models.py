"""Agents that run elsewhere: their identities and tokens, the tools they declare, their calls, their webhooks.

A remote agent's calls are ordinary approvals.ToolCall rows in ordinary runs (one run per thread id),
so the queue, decisions, rules, groups, expiry, live pushes and the audit trail apply unchanged; the
rows here hold what only the API needs: who proposed it, under which declaration, with which
idempotency key, and what the agent reported after executing it.
"""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from approvals.models import Run, Tier, ToolCall

AGENT_NAME = RegexValidator(r"^[a-z0-9][a-z0-9_-]{0,62}\Z", "Lower-case letters, digits, - and _ (at most 63).")
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"  # what the OpenAI function-calling API accepts


class RemoteAgent(models.Model):
    """One agent identity. Its user account is the requester of its runs: that account can never decide them."""

    name = models.CharField(max_length=63, unique=True, validators=[AGENT_NAME])
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="remote_agent")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class AgentToken(models.Model):
    """A bearer token of one agent. Only its SHA-256 digest is stored; the prefix tells tokens apart."""

    agent = models.ForeignKey(RemoteAgent, on_delete=models.CASCADE, related_name="tokens")
    prefix = models.CharField(max_length=16, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.prefix}… ({self.agent})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class DeclaredTool(models.Model):
    """One version of a tool an agent declared. A changed declaration is a new version; calls keep theirs."""

    agent = models.ForeignKey(RemoteAgent, on_delete=models.PROTECT, related_name="tools")
    name = models.CharField(max_length=64)
    version = models.PositiveIntegerField(default=1)
    current = models.BooleanField(default=True)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    tier = models.CharField(max_length=16, choices=Tier.choices)
    description_template = models.TextField(blank=True)
    decisions = models.JSONField(default=list)
    key_fields = models.JSONField(default=list)
    # Running it twice with the same execution key does no harm: a lapsed claim may be taken again.
    idempotent = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent", "name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name", "version"], name="declaredtool_unique_version"),
            models.UniqueConstraint(
                fields=["agent", "name"], condition=Q(current=True), name="declaredtool_one_current"
            ),
        ]

    def __str__(self):
        return f"{self.agent}.{self.name} v{self.version}"

    @property
    def qualified_name(self) -> str:
        """The name its calls carry in the record: the agent's name first, so rules and settings are per agent."""
        return f"{self.agent.name}.{self.name}"

    def declaration(self) -> dict:
        return {
            "description": self.description,
            "input_schema": self.input_schema,
            "tier": self.tier,
            "description_template": self.description_template,
            "decisions": list(self.decisions),
            "key_fields": list(self.key_fields),
            "idempotent": self.idempotent,
        }


class Thread(models.Model):
    """An agent's thread (or run) id and the ReviewHub run that holds its calls."""

    agent = models.ForeignKey(RemoteAgent, on_delete=models.PROTECT, related_name="threads")
    thread_id = models.CharField(max_length=200)
    run = models.OneToOneField(Run, on_delete=models.PROTECT, related_name="remote_thread")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "thread_id"], name="thread_unique_id")]


class RemoteCall(models.Model):
    """What the API needs of a remote agent's call besides the ToolCall: its declaration, key and report."""

    tool_call = models.OneToOneField(ToolCall, on_delete=models.PROTECT, primary_key=True, related_name="remote")
    agent = models.ForeignKey(RemoteAgent, on_delete=models.PROTECT, related_name="calls")
    # The declaration the call was proposed under; none for a model turn the agent asked to have reviewed.
    tool = models.ForeignKey(DeclaredTool, null=True, blank=True, on_delete=models.PROTECT, related_name="calls")
    thread_id = models.CharField(max_length=200)
    idempotency_key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    reported_ok = models.BooleanField(null=True, blank=True)
    reported_output = models.TextField(blank=True)
    reported_at = models.DateTimeField(null=True, blank=True)
    # When the agent first read the call approved (since its last claim): remote/unclaimed.py.
    approval_read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "idempotency_key"], name="remotecall_unique_key")]


class Webhook(models.Model):
    """Where an agent hears of decisions. The secret signs deliveries (Standard Webhooks); it is shown once."""

    agent = models.ForeignKey(RemoteAgent, on_delete=models.PROTECT, related_name="webhooks")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=100, editable=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.agent}: {self.url}"


class WebhookDelivery(models.Model):
    """One event sent (or being retried) to one webhook: the delivery log."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Gave up"

    webhook = models.ForeignKey(Webhook, on_delete=models.PROTECT, related_name="deliveries")
    tool_call = models.ForeignKey(ToolCall, on_delete=models.PROTECT, related_name="+")
    event_type = models.CharField(max_length=40, default="call.decided")
    message_id = models.CharField(max_length=40, unique=True)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["webhook", "tool_call", "event_type"], name="delivery_once_per_event")
        ]
