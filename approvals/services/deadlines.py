"""Deadlines: a call near its time limit is flagged and its reviewers told; an overdue one is
escalated once where its tool says so, else rejected by the system."""

import logging
from datetime import datetime, timedelta

from django.core.mail import send_mass_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from approvals import audit, live
from approvals.lib.text import duration_text
from approvals.policy import snapshot as policy_snapshot

from ..access import reviewers_for
from ..models import Decision, ToolCall, ToolSetting
from .runs import request_resume
from .shadow import shadow_settle
from .transcript import record_output
from .turn_decisions import turn_expire

log = logging.getLogger(__name__)


def set_deadline(*, call: ToolCall, setting: ToolSetting, now: datetime) -> None:
    call.expires_at = now + setting.timeout()
    call.warn_at = call.expires_at - setting.warn_before()
    call.warned_at = None


def _notify_reviewers(call: ToolCall, subject: str, text: str) -> None:
    """Email the reviewers who may decide this call, once the transaction commits."""
    link = reverse("approvals:call", args=[call.pk])
    recipients = [u.email for u in reviewers_for(call) if u.email]
    body = f"{text}\n\n{call.current_description}\n\nOpen it in ReviewHub: {link}\n"
    messages = [(subject, body, None, [address]) for address in recipients]

    def send():
        try:
            send_mass_mail(messages, fail_silently=False)
        except Exception as exc:  # a notification is a courtesy; the queue shows the flag anyway
            log.warning("could not notify reviewers of call %s: %s", call.pk, exc)

    if messages:
        transaction.on_commit(send)


def toolcall_warn(*, call_id: int, now: datetime) -> bool:
    """Flag a call near its deadline and notify its reviewers, once."""
    with transaction.atomic():
        won = ToolCall.objects.filter(
            pk=call_id, status=ToolCall.Status.PENDING, warned_at__isnull=True, warn_at__lte=now
        ).update(warned_at=now)
        if not won:
            return False
        call = ToolCall.objects.select_related("run", "review_group").get(pk=call_id)
        assert call.expires_at is not None  # a call is warned before its deadline (set_deadline sets both)
        left = duration_text(max(call.expires_at - now, timedelta(0)), coarse=True)
        audit.record(audit.AuditEvent.Kind.DEADLINE_NEAR, tool_call=call, payload={"expires_at": call.expires_at})
        _notify_reviewers(call, f"Decide soon: {call.tool_name} #{call.pk}", f"This call expires in {left}.")
        live.call_changed(call.pk)
    return True


def _escalate(call: ToolCall, setting: ToolSetting, now: datetime) -> None:
    group = setting.escalate_to
    assert group is not None  # setting.escalates
    set_deadline(call=call, setting=setting, now=now)
    ToolCall.objects.filter(pk=call.pk).update(
        review_group=setting.escalate_to,
        escalated_at=now,
        expires_at=call.expires_at,
        warn_at=call.warn_at,
        warned_at=None,
        reviewing_by=None,
        reviewing_until=None,
    )
    call.review_group = setting.escalate_to
    audit.record(
        audit.AuditEvent.Kind.ESCALATED,
        tool_call=call,
        payload={"to_group": group.name, "expires_at": call.expires_at},
    )
    _notify_reviewers(
        call,
        f"Escalated to you: {call.tool_name} #{call.pk}",
        f"Nobody decided this call in time; it was escalated to the group “{group.name}”.",
    )
    live.call_changed(call.pk)


def _reject_overdue(call: ToolCall, reason: str) -> Decision:
    decision = Decision.objects.create(
        tool_call=call, reviewer=None, verdict=Decision.Verdict.EXPIRE, reason=reason, round=call.review_round
    )
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.EXPIRED, reviewing_by=None, reviewing_until=None)
    audit.record(audit.AuditEvent.Kind.EXPIRED, tool_call=call, payload={"reason": reason})
    if call.kind == ToolCall.Kind.QUESTION:  # a tool's question nobody answered
        record_output(call=call, output=f"Nobody answered the question in time ({reason}); there is no answer.")
    else:
        record_output(call=call, output=f"Rejected by the system: {reason}. Nothing was done.")
    shadow_settle(call=call, verdict=Decision.Verdict.EXPIRE)
    live.call_changed(call.pk)
    request_resume(call.run_id, decided=call.pk)
    return decision


def toolcall_expire(*, call_id: int, reason: str = "", now: datetime | None = None) -> Decision | None:
    """Decide an overdue call as the system: escalate it once where its tool says so, else reject it.

    With `now`, only a call whose deadline has passed by then is touched (the
    periodic pass); without it, the caller says the call is overdue.
    """
    with transaction.atomic():
        call = ToolCall.objects.select_for_update(of=("self",)).select_related("run").get(pk=call_id)
        if call.status != ToolCall.Status.PENDING:
            return None
        if now is not None and (call.expires_at is None or call.expires_at > now):
            return None
        now = now or timezone.now()
        setting = policy_snapshot.tool_setting(call.tool_name)
        if call.kind == ToolCall.Kind.TURN:  # fails closed: the run stops, for a person to Retry
            return turn_expire(call=call, reason=reason or f"no decision within {duration_text(setting.timeout())}")
        if setting.escalates and call.escalated_at is None:
            _escalate(call, setting, now)
            return None
        return _reject_overdue(call, reason or f"no decision within {duration_text(setting.timeout())}")


def expire_overdue(*, now: datetime | None = None) -> int:
    """Escalate or reject every pending call past its deadline; returns how many were rejected."""
    now = now or timezone.now()
    overdue = ToolCall.objects.filter(status=ToolCall.Status.PENDING, expires_at__lte=now)
    return sum(1 for call_id in overdue.values_list("pk", flat=True) if toolcall_expire(call_id=call_id, now=now))


def deadlines_apply(*, now: datetime | None = None) -> dict:
    """The periodic pass: flag and notify calls near their deadline, then escalate or expire overdue ones."""
    now = now or timezone.now()
    near = ToolCall.objects.filter(status=ToolCall.Status.PENDING, warned_at__isnull=True, warn_at__lte=now)
    warned = sum(toolcall_warn(call_id=pk, now=now) for pk in near.values_list("pk", flat=True))
    return {"warned": warned, "expired": expire_overdue(now=now)}
