"""Which way a reviewer wants to hear of a call: the most specific matching preference wins."""

from django.db.models import Q

from approvals.models import ToolCall

from .models import NotificationPreference

DEFAULT = NotificationPreference(browser=True, email=NotificationPreference.Email.OFF, chat=False)


def preference_for(user, call: ToolCall, rows: list[NotificationPreference] | None = None) -> NotificationPreference:
    """This user's preference for this call's tool and group (rows: the user's, when the caller has them)."""
    if rows is None:
        rows = list(NotificationPreference.objects.filter(user=user))
    matching = [
        row for row in rows if row.tool_name in ("", call.tool_name) and row.group_id in (None, call.review_group_id)
    ]
    return max(matching, key=lambda row: row.specificity, default=DEFAULT)


def preferences_by_user(users, call: ToolCall) -> dict[int, NotificationPreference]:
    """Each user's preference for this call, in one query."""
    scope = Q(tool_name__in=("", call.tool_name)) & (Q(group__isnull=True) | Q(group_id=call.review_group_id))
    rows: dict[int, list] = {}
    for row in NotificationPreference.objects.filter(scope, user__in=users):
        rows.setdefault(row.user_id, []).append(row)
    return {user.pk: preference_for(user, call, rows.get(user.pk, [])) for user in users}
