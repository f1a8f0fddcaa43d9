"""Shadow rules: what each would have decided, set beside what people decided. They change nothing.

The gate stores what they would have decided (ShadowResult rows, with the step: steps.step_store)."""

from ..models import ShadowResult, ToolCall


def shadow_settle(*, call: ToolCall, verdict: str) -> None:
    """Put the people's final verdict next to what the shadow rules would have done."""
    for result in ShadowResult.objects.filter(tool_call=call, verdict=""):
        result.verdict = verdict
        result.agreed = ShadowResult.agreement(result.outcome, verdict)
        result.save(update_fields=["verdict", "agreed"])
