"""Links into ReviewHub for what goes out (emails, Slack messages)."""

from django.conf import settings
from django.urls import reverse

from approvals.models import ToolCall


def call_link(call: ToolCall) -> str:
    return settings.REVIEWHUB_SITE_URL.rstrip("/") + reverse("approvals:call", args=[call.pk])
