"""Who may see and decide which calls. Checked by the server on every action.

A reviewer is a user with the review permission. A call whose policy names a
group (ToolSetting.group, PolicyRule.group, or an escalation) is seen and
decided only by members of that group. Nobody decides the calls of a run they
requested, and nobody decides one call twice in one review round.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q

from .models import ToolCall

REVIEW_PERMISSION = "approvals.review_toolcall"


def is_reviewer(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.has_perm(REVIEW_PERMISSION))


def in_group(user, group_id: int | None) -> bool:
    """Whether the user belongs to the group a call is restricted to (superusers belong everywhere)."""
    if group_id is None or user.is_superuser:
        return True
    return any(group.pk == group_id for group in user.groups.all())  # uses groups prefetched by a caller


def can_decide(user, call: ToolCall) -> tuple[bool, str]:
    if not is_reviewer(user):
        return False, "You are not a reviewer."
    if call.run.requested_by_id is not None and call.run.requested_by_id == user.pk:
        return False, "You requested this run, so you cannot decide its calls."
    if not in_group(user, call.review_group_id):
        return False, f"Only members of the group “{call.review_group}” may decide this call."
    if call.is_pending and any(d.round == call.review_round and d.reviewer_id == user.pk for d in call.decisions.all()):
        return False, "You already approved this call; it needs the approval of another reviewer."
    return True, ""


def visible_calls(user, queryset=None):
    """The calls this user may review."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not is_reviewer(user):
        return queryset.none()
    if user.is_superuser:
        return queryset
    return queryset.filter(Q(review_group__isnull=True) | Q(review_group__in=user.groups.all()))


def reviewers_for(call: ToolCall):
    """The active users who may decide this call: whom to notify about it."""
    permission = Permission.objects.filter(codename="review_toolcall", content_type__app_label="approvals").first()
    users = get_user_model().objects.filter(
        Q(groups__permissions=permission) | Q(user_permissions=permission) | Q(is_superuser=True), is_active=True
    )
    if call.review_group_id is not None:
        users = users.filter(Q(groups=call.review_group_id) | Q(is_superuser=True))
    if call.run.requested_by_id is not None:
        users = users.exclude(pk=call.run.requested_by_id)
    return users.distinct().order_by("pk")
