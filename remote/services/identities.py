"""Agent identities: a name and a user account that requests the agent's runs and can decide nothing."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import AGENT_NAME, RemoteAgent


@transaction.atomic
def agent_get_or_create(*, name: str) -> tuple[RemoteAgent, bool]:
    """The agent of this name, made with its own user account (`agent-NAME`, no password) if new."""
    AGENT_NAME(name)
    agent = RemoteAgent.objects.filter(name=name).first()
    if agent is not None:
        return agent, False
    users = get_user_model().objects
    username = f"agent-{name}"
    if users.filter(username=username).exists():
        raise ValidationError(f"A user named {username!r} exists already; pick another agent name.")
    user = users.create_user(username=username)  # no password: it never logs in, it only requests runs
    return RemoteAgent.objects.create(name=name, user=user), True
