"""Slack through its official SDK (slack-sdk): new calls posted to their group's channel, with
Approve / Reject buttons where chat decisions are allowed and "Open in ReviewHub" always; the
message rewritten when the call is decided, wherever that happened.

Everything here runs in a task (ops/tasks.py), after the commit that caused it. Text from the
model or a customer goes out as plain_text blocks: Slack renders no markup or mention from it.
"""

import json
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from approvals.access import chat_decisions_allowed
from approvals.lib.text import visible
from approvals.models import Decision, ToolCall
from approvals.tools import registry

from . import metrics
from .links import call_link
from .models import SlackChannel, SlackDecision, SlackIdentity, SlackMessage

log = logging.getLogger(__name__)
MAX_FIELDS = 10  # Slack's limit on a section's fields


def client() -> WebClient:
    options: dict[str, Any] = {"base_url": settings.SLACK_API_URL} if settings.SLACK_API_URL else {}
    return WebClient(token=settings.SLACK_BOT_TOKEN, timeout=10, **options)


def _plain(text: str, limit: int = 2900) -> dict:
    """Plain text (Slack renders no markup or mention in it), hidden characters made visible."""
    return {"type": "plain_text", "text": (visible(text) or " ")[:limit], "emoji": False}


def _facts(call: ToolCall) -> list[dict]:
    """The key arguments (sensitive ones masked) and the facts fetched by code, as short fields."""
    tool = registry.for_call(call)
    arguments = tool.masked(call.review_arguments) if tool else {}
    keys = tool.key_values(arguments) if tool else []
    rows = [(name, value) for name, value in keys] + [(row["key"], row["value"]) for row in call.fact_rows]
    return [_plain(f"{name}: {value}", 200) for name, value in rows[:MAX_FIELDS]]


def _buttons(call: ToolCall, decidable: bool) -> dict:
    value = json.dumps({"call": call.pk, "hash": call.review_hash})
    open_button = {"type": "button", "action_id": "open", "text": _plain("Open in ReviewHub"), "url": call_link(call)}
    if not decidable:
        return {"type": "actions", "elements": [open_button]}
    approve = {"type": "button", "action_id": "approve", "style": "primary", "text": _plain("Approve"), "value": value}
    reject = {"type": "button", "action_id": "reject", "style": "danger", "text": _plain("Reject"), "value": value}
    return {"type": "actions", "elements": [approve, reject, open_button]}


def outcome_text(call: ToolCall) -> str:
    """What became of the call, for the rewritten message: "Approved by alice in Slack", and so on."""
    decision = call.final_decision()
    if call.status == ToolCall.Status.CANCELLED:
        return "Cancelled with its run."
    if decision is None:
        return f"{call.get_status_display()}."
    if decision.verdict == Decision.Verdict.EXPIRE:
        return f"Expired: {decision.reason}."
    where = "in Slack" if SlackDecision.objects.filter(decision=decision).exists() else "in ReviewHub"
    text = f"{decision.label_for(call.kind)} by {decision.reviewer_label} {where}"
    if decision.verdict == Decision.Verdict.REJECT:
        text += f": {decision.reason}"
    if call.status in (ToolCall.Status.EXECUTED, ToolCall.Status.FAILED):
        text += f" · {call.get_status_display().lower()}"
    return text


def blocks(call: ToolCall, mention: Sequence[str] = ()) -> list[dict]:
    """The message for this call as it stands: waiting (with buttons) or settled (with its outcome)."""
    # A revision says so: the previous round, its reason and what changed are on its card in ReviewHub.
    revised = f" · round {call.revision}, revised after a reviewer sent it back" if call.revision > 1 else ""
    head = f"New call to review · {call.tool_name}{revised} · run {call.run_id}"
    head = head if call.is_pending else outcome_text(call)
    message = [{"type": "section", "text": _plain(head)}, {"type": "section", "text": _plain(call.current_description)}]
    fields = _facts(call)
    if fields:
        message.append({"type": "section", "fields": fields})
    if call.is_pending and call.warning:
        message.append({"type": "section", "text": _plain(f"Warning: {call.warning}")})
    if mention:
        message.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " ".join(mention)}]})
    message.append(_buttons(call, decidable=call.is_pending and chat_decisions_allowed(call)[0]))
    return message


def escaped(text: str) -> str:
    """Text for a field Slack reads as mrkdwn (a message's `text`): no link, mention or @channel from it."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fallback(call: ToolCall) -> str:
    """The message's `text`: what notifications and old clients show."""
    text = f"{call.tool_name}: {call.current_description}"[:300] if call.is_pending else outcome_text(call)
    return escaped(text)


def _send(method: str, **arguments) -> dict | None:
    """One Web API call; a refusal or an unreachable Slack is logged and counted, never raised."""
    try:
        answer = getattr(client(), method)(**arguments)
    except SlackApiError as exc:
        log.warning("Slack %s failed: %s", method, exc.response.get("error"))
    except OSError as exc:
        log.warning("Slack %s failed: %s", method, exc)
    else:
        metrics.NOTIFICATIONS.labels("slack", "sent").inc()
        return answer
    metrics.NOTIFICATIONS.labels("slack", "failed").inc()
    return None


def call_post(*, call: ToolCall, mention=()) -> None:
    """Post a waiting call to its group's channel (rewriting the post it already has there), and rewrite
    its posts elsewhere (the channel of the group it was escalated from: only the link is left there)."""
    channel = SlackChannel.objects.filter(group=call.review_group_id).first()
    if channel is None:
        return call_update(call_id=call.pk)
    ids = list(SlackIdentity.objects.filter(user__in=list(mention)).values_list("slack_user_id", flat=True))
    message = {"text": _fallback(call), "blocks": blocks(call, [f"<@{slack_id}>" for slack_id in ids])}
    posted = SlackMessage.objects.filter(tool_call=call, channel_id=channel.channel_id).first()
    if posted is not None:
        _send("chat_update", channel=posted.channel_id, ts=posted.ts, **message)
    elif answer := _send("chat_postMessage", channel=channel.channel_id, **message):
        SlackMessage.objects.get_or_create(tool_call=call, channel_id=channel.channel_id, defaults={"ts": answer["ts"]})
    call_update(call_id=call.pk, except_channel=channel.channel_id)


def call_update(*, call_id: int, except_channel: str = "") -> None:
    """Rewrite every post of this call (but the one in `except_channel`) to say how it stands."""
    call = ToolCall.objects.select_related("run", "review_group").filter(pk=call_id).first()
    if call is None:
        return
    for posted in SlackMessage.objects.filter(tool_call=call).exclude(channel_id=except_channel):
        _send("chat_update", channel=posted.channel_id, ts=posted.ts, text=_fallback(call), blocks=blocks(call))


def run_update(*, run_id: int) -> None:
    for call_id in SlackMessage.objects.filter(tool_call__run_id=run_id).values_list("tool_call_id", flat=True):
        call_update(call_id=call_id)


def tell(*, channel_id: str, slack_user_id: str, text: str) -> None:
    """A note only this Slack user sees (why a button did nothing)."""
    _send("chat_postEphemeral", channel=channel_id, user=slack_user_id, text=escaped(text))
