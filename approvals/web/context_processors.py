from functools import cache

from approvals.access import can_set_notifications, can_start_run, is_reviewer
from approvals.selectors import pending_count


def queue_count(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        # Counted when a template first asks, at most once; the queue page passes the count it already has.
        "queue_count": cache(lambda: pending_count(user)),
        "is_reviewer": is_reviewer(user),
        "may_start_runs": can_start_run(user)[0],
        "may_set_notifications": can_set_notifications(user)[0],
    }
