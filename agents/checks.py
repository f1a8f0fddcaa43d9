"""System checks for the agent runtime's settings."""

from django.conf import settings
from django.core import checks

from . import llm


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
