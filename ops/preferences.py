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


def _rows_by_user(user_ids, call: ToolCall | None = None) -> dict[int, list[NotificationPreference]]:
    """These users' preferences by user: those that may match this call, or (no call) all of them."""
    rows_of = NotificationPreference.objects.filter(user_id__in=user_ids)
    if call is not None:
        rows_of = rows_of.filter(
            Q(tool_name__in=("", call.tool_name)) & (Q(group__isnull=True) | Q(group_id=call.review_group_id))
        )
    rows: dict[int, list] = {}
    for row in rows_of:
        rows.setdefault(row.user_id, []).append(row)
    return rows


def preferences_by_user(users, call: ToolCall) -> dict[int, NotificationPreference]:
    """Each user's preference for this call, in one query."""
    rows = _rows_by_user([user.pk for user in users], call)
    return {user.pk: preference_for(user, call, rows.get(user.pk, [])) for user in users}


def browser_by_user(calls: list[ToolCall], user_ids: list[int]) -> dict[int, dict[int, bool]]:
    """For a live push: by call id, whether each of these users wants a browser notification of it (one query for
    all the calls: these users' preferences, matched to each call here)."""
    rows = _rows_by_user(user_ids)
    return {
        call.pk: {user_id: preference_for(None, call, rows.get(user_id, [])).browser for user_id in user_ids}
        for call in calls
    }
