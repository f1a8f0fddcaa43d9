"""The resumption seam (settings.REVIEWHUB_RESUME): approvals/ calls enqueue_advance() after a commit,
and so does the sweep. Where the work then runs is agents/tasks.py's affair."""

from approvals.models import ToolCall

from .loop import TOOLS, TURN
from .tasks import advance_later


def enqueue_advance(run_id: int, *, approved: bool = False) -> None:
    """Take the run further: its approved calls first, else its next model turn. `approved`: the caller has just
    approved one of its calls (settings.REVIEWHUB_RESUME's keyword), so there is one without asking."""
    runnable = approved or ToolCall.objects.filter(run_id=run_id, status__in=ToolCall.RUNNABLE).exists()
    advance_later(run_id, TOOLS if runnable else TURN)
