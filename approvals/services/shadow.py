"""Shadow rules: what each would have decided, set beside what people decided. They change nothing."""

from ..models import ShadowResult, ToolCall
from ..policy import shadow_outcomes
from ..tools import Tool


def shadow_record(*, call: ToolCall, tool: Tool) -> list[dict]:
    """Store what each matching shadow rule would have decided about this call."""
    recorded = []
    for rule, outcome in shadow_outcomes(tool, call.arguments):
        ShadowResult.objects.create(rule=rule, tool_call=call, outcome=outcome)
        recorded.append({"rule": rule.pk, "name": rule.name, "outcome": outcome})
    return recorded


def shadow_settle(*, call: ToolCall, verdict: str) -> None:
    """Put the people's final verdict next to what the shadow rules would have done."""
    for result in ShadowResult.objects.filter(tool_call=call, verdict=""):
        result.verdict = verdict
        result.agreed = ShadowResult.agreement(result.outcome, verdict)
        result.save(update_fields=["verdict", "agreed"])
