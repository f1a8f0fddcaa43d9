"""Slack's button requests: verified with the app's signing secret (slack-sdk's SignatureVerifier),
from a Slack user linked to a ReviewHub user who may decide this call in chat (approvals.access),
and decided like every other decision: approvals.services.toolcall_decide, bound to the call id and
the hash of the arguments the message showed. Anything else changes nothing.
"""

import json
import logging
from dataclasses import dataclass
from urllib.parse import parse_qs

from django.conf import settings
from django.db import transaction
from slack_sdk.signature import SignatureVerifier

from approvals.access import can_decide_in_chat
from approvals.models import Decision, ToolCall
from approvals.services import DecisionError, toolcall_decide
from runtime.background import background

from . import tasks
from .models import SlackDecision, SlackIdentity

log = logging.getLogger(__name__)
VERDICTS = {"approve": Decision.Verdict.APPROVE, "reject": Decision.Verdict.REJECT}


class NotSigned(Exception):
    """The request does not carry a valid signature of ours: answered 401, nothing changes."""


class Malformed(Exception):
    """Signed, but not a button request we understand: answered 400, nothing changes."""


@dataclass(frozen=True)
class Press:
    """One button press: who, where, which button, on which call, bound to which arguments."""

    slack_user_id: str
    channel_id: str
    verdict: str
    call_id: int
    shown_hash: str


def verified(*, body: bytes, headers) -> None:
    secret = settings.SLACK_SIGNING_SECRET
    try:
        ok = bool(secret) and SignatureVerifier(secret).is_valid_request(body, dict(headers))
    except (ValueError, TypeError):  # a timestamp that is not a number
        ok = False
    if not ok:
        raise NotSigned("The request is not signed with this app's signing secret.")


def press_from(body: bytes) -> Press | None:
    """The press in a block_actions payload; None for a button that only opens a link."""
    try:
        payload = json.loads(parse_qs(body.decode())["payload"][0])
        action = payload["actions"][0]
        if action.get("action_id") not in VERDICTS:
            return None
        value = json.loads(action["value"])
        return Press(
            slack_user_id=str(payload["user"]["id"]),
            channel_id=str((payload.get("channel") or {}).get("id", "")),
            verdict=VERDICTS[action["action_id"]],
            call_id=int(value["call"]),
            shown_hash=str(value["hash"]),
        )
    except (KeyError, IndexError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise Malformed(f"Not a button request: {exc}")


def _decide(press: Press) -> str:
    """Decide the call as the linked user; returns what to tell them ("" when it was decided)."""
    identity = SlackIdentity.objects.select_related("user").filter(slack_user_id=press.slack_user_id).first()
    if identity is None:
        return "Your Slack account is not linked to a ReviewHub user; ask an administrator to link it."
    call = ToolCall.objects.select_related("run", "review_group").filter(pk=press.call_id).first()
    if call is None:
        return "There is no such call."
    user = identity.user
    allowed, why = can_decide_in_chat(user, call)
    if not allowed and call.is_pending:
        return why
    reason = f"rejected by {user.get_username()} in Slack" if press.verdict == Decision.Verdict.REJECT else ""
    try:
        with transaction.atomic():
            decision = toolcall_decide(
                call_id=call.pk,
                reviewer=user,
                verdict=press.verdict,
                shown_hash=press.shown_hash,
                reason=reason,
                channel="slack",
            )
            SlackDecision.objects.create(decision=decision, slack_user_id=press.slack_user_id)
    except DecisionError as exc:
        return str(exc)
    return ""


def interaction_handle(*, body: bytes, headers) -> None:
    """Verify and act on one request from Slack's interactivity URL. Raises NotSigned or Malformed."""
    verified(body=body, headers=headers)
    press = press_from(body)
    if press is None:
        return
    note = _decide(press)
    if note and press.channel_id:
        background(tasks.slack_tell, press.channel_id, press.slack_user_id, note, pool="notify")
