"""System checks for the agent runtime's settings."""

from django.conf import settings
from django.core import checks

from approvals.tools import CHECKPOINT
from approvals.tools import registry as tools

from . import llm
from .agents import registry


@checks.register()
def turn_lease_outlasts_a_model_turn(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A turn still waiting for the model must not be taken over by the sweep as if its worker had died."""
    longest = llm.longest_turn_seconds()
    if longest < settings.TURN_LEASE_SECONDS:
        return []
    return [
        checks.Warning(
            f"TURN_LEASE_SECONDS ({settings.TURN_LEASE_SECONDS}) is not longer than the longest model turn "
            f"({longest:.0f} s: {settings.OPENAI_MAX_RETRIES + 1} attempts of OPENAI_TIMEOUT "
            f"{settings.OPENAI_TIMEOUT:g} s, and the backoffs).",
            hint="Raise TURN_LEASE_SECONDS, or lower OPENAI_TIMEOUT or OPENAI_MAX_RETRIES.",
            id="agents.W001",
        )
    ]


@checks.register()
def agents_declare_registered_tools(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """An agent's tool list names tools that exist: a misspelt one would silently never be offered."""
    return [
        checks.Error(
            f"Agent {agent.name!r} declares the tool {name!r}, which no app registers.",
            hint="Register the tool (approvals.tools.registry.register) or remove it from the agent's tools.",
            id="agents.E002",
        )
        for agent in registry.all()
        for name in agent.tools
        if tools.get(name) is None
    ]


@checks.register()
def agents_declare_registered_checkpoints(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A checkpoint names a registered tool of kind checkpoint: its code runs once the draft is approved."""
    return [
        checks.Error(
            f"Agent {agent.name!r} declares the checkpoint {checkpoint.name!r}, which is not a registered tool "
            "of kind checkpoint.",
            hint="Register a Tool(name=..., kind=approvals.tools.CHECKPOINT, ...) for it.",
            id="agents.E003",
        )
        for agent in registry.all()
        for checkpoint in agent.checkpoints
        if getattr(tools.get(checkpoint.name), "kind", None) != CHECKPOINT
    ]
