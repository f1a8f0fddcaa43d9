"""Operations: notifications, metrics, practice calls, the admin, learned rules, tokens and webhooks."""

import hmac
import ipaddress

from django.conf import settings
from django.db.models import Q

from ..models import ToolCall
from .people import (
    logged_in,
    may_act,
    may_review,
)


def can_set_notifications(user) -> tuple[bool, str]:
    """Choose how to hear of new calls: whoever may decide calls (not auditors, not other users)."""
    return may_review(user)


def can_read_metrics(*, authorization: str, address: str) -> bool:
    """/metrics: a scraper that sends `Authorization: Bearer <METRICS_TOKEN>`, or comes from one of
    METRICS_ALLOWED_NETWORKS. With neither configured, nobody (logged in or not: it is not a page)."""
    token = settings.METRICS_TOKEN
    if token and hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        return True
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(client in ipaddress.ip_network(network, strict=False) for network in settings.METRICS_ALLOWED_NETWORKS)


# --- practice calls (practice/) ------------------------------------------------------------------

PRACTICE_PERMISSION = "practice.audit_practice"  # lists practice calls before they are decided
CATCH_RATE_PERMISSION = "approvals.view_auditevent"  # reads the catch rates, as it reads the insight page


def can_list_practice_calls(user) -> bool:
    """Who may know which waiting calls are practice ones: the dedicated permission only (auditors hold it)."""
    return logged_in(user) and user.has_perm(PRACTICE_PERMISSION)


def can_read_catch_rates(user) -> bool:
    return logged_in(user) and user.has_perm(CATCH_RATE_PERMISSION)


def practice_calls_for(user, queryset):
    """The practice calls a user may list: all of them with the dedicated permission; with the insight's
    permission, only those decided (or expired); nobody else any."""
    if can_list_practice_calls(user):
        return queryset
    if not can_read_catch_rates(user):
        return queryset.none()
    return queryset.filter(~Q(outcome="waiting") | Q(tool_call__status=ToolCall.Status.EXPIRED))


def may_change_in_admin(user) -> bool:
    """Whether the admin may let this user add, change, delete or run an action at all (Django's model
    permissions decide the rest): never an auditor, whatever else they hold (even superuser)."""
    return may_act(user)[0]


def can_add_learned_rule(user) -> tuple[bool, str]:
    """Add a rule Insight proposes from decisions (approvals/insight/learned.py), in shadow mode: who may add policy
    rules in the admin (staff with approvals.add_policyrule), never an auditor. Reading the proposals is
    reading Insight."""
    allowed, why = may_act(user)
    if not allowed:
        return False, why
    if not (user.is_staff and user.has_perm("approvals.add_policyrule")):
        return False, "Only people who may add policy rules in the admin can add a proposed rule."
    return True, ""


def can_revoke_tokens(user) -> bool:
    """Revoke an agent's token in the admin: who may change tokens (superusers), never an auditor."""
    return may_change_in_admin(user) and user.has_perm("remote.change_agenttoken")


def can_redeliver_webhooks(user) -> bool:
    return may_change_in_admin(user) and user.has_perm("remote.change_webhookdelivery")
