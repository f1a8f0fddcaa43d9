"""Notification preferences, and what ties ReviewHub to Slack: channels, people, posted messages."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q

from approvals.models import Decision, ToolCall


class NotificationPreference(models.Model):
    """How one reviewer hears of new calls, for one tool and one group (blank: every tool, every group).

    The most specific row that matches a call wins (tool and group, then tool, then group, then
    neither); without any, the browser notifies and neither email nor chat does.
    """

    class Email(models.TextChoices):
        OFF = "off", "No email"
        EACH = "each", "One email per call"
        DIGEST = "digest", "A digest every few minutes"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField(max_length=200, blank=True, help_text="Empty: every tool.")
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    browser = models.BooleanField(default=True, help_text="A browser notification while the queue is open.")
    email = models.CharField(max_length=8, choices=Email.choices, default=Email.OFF)
    chat = models.BooleanField(default=False, help_text="Mention me in the group's Slack channel.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tool_name", "group"], name="preference_one_per_scope"),
            models.UniqueConstraint(
                fields=["user", "tool_name"], condition=Q(group__isnull=True), name="preference_one_per_tool"
            ),
        ]

    def __str__(self):
        return f"{self.user} · {self.tool_name or 'every tool'} · {self.group or 'every group'}"

    @property
    def specificity(self) -> int:
        return 2 * bool(self.tool_name) + bool(self.group_id)


class DigestState(models.Model):
    """When a reviewer's last digest went out: the next lists only what is new since (and still waits)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    sent_at = models.DateTimeField()


class SlackChannel(models.Model):
    """Where a group's new calls are posted (no group: calls any reviewer may decide)."""

    group = models.OneToOneField(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    channel_id = models.CharField(max_length=64, help_text="Slack's channel id, e.g. C0123456789.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel_id"], condition=Q(group__isnull=True), name="slack_one_default")
        ]

    def __str__(self):
        return f"{self.group or 'any reviewer'} → {self.channel_id}"


class SlackIdentity(models.Model):
    """A Slack user who is this ReviewHub user: their buttons decide as this user, if access allows it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="slack")
    slack_user_id = models.CharField(max_length=64, unique=True, help_text="Slack's member id, e.g. U0123456789.")

    def __str__(self):
        return f"{self.user} = {self.slack_user_id}"


class SlackMessage(models.Model):
    """A call as posted to a channel; updated when the call is decided, wherever that happens."""

    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="+")
    channel_id = models.CharField(max_length=64)
    ts = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tool_call", "channel_id"], name="slack_one_post_per_call")]


class SlackDecision(models.Model):
    """A decision taken with a Slack button: the message then says "in Slack"."""

    decision = models.OneToOneField(Decision, on_delete=models.CASCADE, related_name="+")
    slack_user_id = models.CharField(max_length=64)
