"""Who may see and decide which calls. Checked by the server on every action."""

from .models import ToolCall

REVIEW_PERMISSION = "approvals.review_toolcall"


def is_reviewer(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.has_perm(REVIEW_PERMISSION))


def can_decide(user, call: ToolCall) -> tuple[bool, str]:
    if not is_reviewer(user):
        return False, "You are not a reviewer."
    if call.run.requested_by_id is not None and call.run.requested_by_id == user.pk:
        return False, "You requested this run, so you cannot decide its calls."
    return True, ""


def visible_calls(user, queryset=None):
    """The calls this user may review."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not is_reviewer(user):
        return queryset.none()
    return queryset
