"""Read queries used in several places: the pending queue, as one user may see it."""

from django.db.models import Count, Q

from . import access
from .models import ToolCall

PENDING = Q(status=ToolCall.Status.PENDING)


def pending_calls(user):
    """The calls waiting for review that this user may see, oldest first, ready for the call panel."""
    return (
        access.visible_calls(user, ToolCall.objects.filter(PENDING))
        .select_related("run", "run__requested_by", "review_group", "reviewing_by")
        .order_by("created_at", "id")
    )


def pending_count(user) -> int:
    return access.visible_calls(user, ToolCall.objects.filter(PENDING)).count()


def sees_call_and_pending_count(user, call_id: int) -> tuple[bool, int]:
    """Whether this user may see the call, and how many calls wait for them: one query."""
    seen = access.visible_calls(user, ToolCall.objects.filter(Q(pk=call_id) | PENDING)).aggregate(
        this=Count("pk", filter=Q(pk=call_id)), pending=Count("pk", filter=PENDING)
    )
    return bool(seen["this"]), seen["pending"]
