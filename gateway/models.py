"""The MCP gateway: ReviewHub's own remote agent, in front of MCP servers configured here.

A gateway is a remote agent identity (remote.RemoteAgent) that lives in ReviewHub's processes: its upstream
servers' tools become the agent's declared tools, and a client's tools/call becomes a proposed call of that
agent (remote.services), so the queue, the panel, rules, groups, expiry, claims, pushes and the trail apply.
"""

import re
import shlex

from django.core.exceptions import ValidationError
from django.db import models

from approvals.models import Tier, ToolCall
from remote.models import RemoteAgent


class Gateway(models.Model):
    """One gateway, served as `manage.py mcp_gateway NAME` and at /mcp/NAME/; its name is its agent's."""

    agent = models.OneToOneField(RemoteAgent, on_delete=models.PROTECT, related_name="gateway")
    answer_after_seconds = models.PositiveIntegerField(
        default=50,
        help_text="How long a call waiting for review is held (with progress notifications) before the client "
        "gets an error saying it still waits; calling it again keeps waiting on the same call.",
    )

    def __str__(self):
        return self.agent.name

    @property
    def name(self) -> str:
        return self.agent.name


# ReviewHub's own secrets: never handed to an upstream from the gateway's environment, whatever its entry says.
KEPT_FROM_UPSTREAMS = frozenset(
    {
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "EMAIL_HOST_PASSWORD",
        "METRICS_TOKEN",
        "OPENAI_API_KEY",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "REVIEWHUB_ENV_FILE",
    }
)
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def environment_entries(text: str) -> list[tuple[str, str | None]]:
    """An upstream's environment as its entry says it, one per line: `NAME` (the gateway's own value of NAME)
    or `NAME=value`; blank lines and `#` comments are skipped. Raises ValueError naming a line it cannot read."""
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        name = name.strip()
        if not VARIABLE.fullmatch(name):
            raise ValueError(f"Line {number}: {name!r} is not a variable name (write NAME or NAME=value).")
        if not equals and name in KEPT_FROM_UPSTREAMS:
            raise ValueError(f"Line {number}: {name} is one of ReviewHub's secrets; it is never passed on.")
        entries.append((name, value if equals else None))
    return entries


class Upstream(models.Model):
    """An MCP server behind a gateway: a command spoken to over stdio, or a streamable HTTP URL. A command
    starts with only the environment its entry names (and PATH), never the gateway's own."""

    gateway = models.ForeignKey(Gateway, on_delete=models.CASCADE, related_name="upstreams")
    name = models.CharField(max_length=63)
    command = models.CharField(max_length=1000, blank=True, help_text="Run over stdio, e.g. `python server.py`.")
    url = models.URLField(max_length=1000, blank=True, help_text="A streamable HTTP endpoint.")
    environment = models.TextField(
        blank=True,
        help_text="What a command's process gets in its environment besides PATH, one per line: NAME passes the "
        "gateway's own value of NAME, NAME=value sets it. Nothing else of the gateway's environment is passed on "
        "(never ReviewHub's secrets: SECRET_KEY, DATABASE_URL, REDIS_URL, …).",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["gateway", "name"]
        constraints = [models.UniqueConstraint(fields=["gateway", "name"], name="upstream_unique_name")]

    def __str__(self):
        return f"{self.gateway}: {self.name}"

    def clean(self):
        if bool(self.command.strip()) == bool(self.url.strip()):
            raise ValidationError({"command": "Give either a command (stdio) or a URL (streamable HTTP), not both."})
        if self.command.strip():
            try:
                shlex.split(self.command)
            except ValueError as exc:
                raise ValidationError({"command": f"Cannot split this command: {exc}."})
        try:
            environment_entries(self.environment)
        except ValueError as exc:
            raise ValidationError({"environment": str(exc)})


class UpstreamTool(models.Model):
    """A tool an upstream listed, and what the admin says about it (its tier, template and facts)."""

    class Setting(models.TextChoices):
        DEFAULT = "", "From its annotations"
        READ_ONLY = Tier.READ_ONLY, "Read-only: runs without review"
        APPROVAL = Tier.APPROVAL, "Approval required"
        FORBIDDEN = Tier.FORBIDDEN, "Forbidden: never listed"

    upstream = models.ForeignKey(Upstream, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    setting = models.CharField(max_length=16, choices=Setting.choices, blank=True, default="")
    description_template = models.TextField(
        blank=True, help_text="What reviewers read, e.g. `Refund ${amount} on order {order_id}`."
    )
    facts_tool = models.CharField(
        max_length=64,
        blank=True,
        help_text="A read-only tool of the same server called first with the arguments it shares with this one; "
        "its answer is shown to reviewers as facts.",
    )
    problem = models.TextField(blank=True, editable=False)
    listed = models.BooleanField(default=True, editable=False)

    class Meta:
        ordering = ["upstream", "name"]
        constraints = [models.UniqueConstraint(fields=["upstream", "name"], name="upstreamtool_unique_name")]

    def __str__(self):
        return f"{self.upstream}.{self.name}"

    @property
    def default_tier(self) -> str:
        """readOnlyHint runs without review; destructiveHint, or no hint, needs approval."""
        return Tier.READ_ONLY if self.annotations.get("readOnlyHint") is True else Tier.APPROVAL

    @property
    def tier(self) -> str:
        return self.setting or self.default_tier


class GatewayCall(models.Model):
    """A client's tools/call that needs review: which request it answers, and what the upstream returned."""

    tool_call = models.OneToOneField(ToolCall, on_delete=models.PROTECT, primary_key=True, related_name="gateway")
    gateway = models.ForeignKey(Gateway, on_delete=models.PROTECT, related_name="calls")
    request_key = models.CharField(max_length=64, db_index=True)
    result = models.JSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
