"""What a checkpoint's card shows besides its draft: the state of the run at that stage."""

from approvals import access
from approvals.models import ToolCall


def stage_calls(user, call: ToolCall) -> list[ToolCall]:
    """The other calls of this checkpoint's run that this user may read, in order, with their outcomes:
    what the agent did before it wrote the draft (and earlier drafts sent back)."""
    calls = ToolCall.objects.filter(run_id=call.run_id).exclude(pk=call.pk).order_by("id")
    return list(access.readable_calls(user, calls))
