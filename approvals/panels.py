"""What one viewer sees of one call: the context of the call panel partial.

The queue, the call page, their htmx responses and the live push all render
approvals/partials/call_panel.html; everything in it that depends on the viewer
comes from here, so the push cannot drift from the page (and approvals/fanout.py
can render the panel once for all viewers whose context is the same).
"""

from .access import can_decide
from .models import Decision, ToolCall

PANEL_TEMPLATE = "approvals/partials/call_panel.html"


def panel_context(user, call: ToolCall, decision: Decision | None) -> dict:
    allowed, why = can_decide(user, call)
    return {"call": call, "decision": decision, "can_decide": allowed and call.is_pending, "why_not": why}
