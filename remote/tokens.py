"""Agent tokens: `rh_` and 43 random characters, shown once; only their SHA-256 digest is stored.

A token of 256 random bits needs no slow hash: nobody can guess one from its digest.
"""

import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from approvals.lib.unique import one_or_none

from .models import AgentToken, RemoteAgent

PREFIX = "rh_"
SHOWN = len(PREFIX) + 8  # how much of a token the admin shows


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@transaction.atomic
def token_create(*, agent: RemoteAgent) -> tuple[AgentToken, str]:
    """A new token for this agent; the token itself is returned once and never stored."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = AgentToken.objects.create(agent=agent, prefix=token[:SHOWN], digest=digest(token))
    return row, token


def token_revoke(*, token: AgentToken) -> None:
    AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def agent_for_token(token: str) -> RemoteAgent | None:
    """The agent a live (not revoked) token belongs to, or None."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    live = AgentToken.objects.filter(revoked_at__isnull=True, agent__user__is_active=True).select_related("agent__user")
    row = one_or_none(live.filter(digest=digest(token)))  # the digest is unique
    if row is None:
        return None
    now = timezone.now()
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        AgentToken.objects.filter(pk=row.pk).update(last_used_at=now)  # at most one write a minute
    return row.agent
