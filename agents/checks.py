"""System checks for the agent runtime's settings."""

from django.core import checks

from approvals.tools import CHECKPOINT
from approvals.tools import registry as tools

from .agents import registry


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
