"""Seeing and acting on runs: which runs a user sees, starting, retrying and cancelling."""

from django.db.models import Exists, OuterRef, Q

from ..models import Run, ToolCall
from .people import is_reviewer, logged_in, may_act, may_review, reads_record, requested, reviews_group_q


def visible_runs(user, queryset=None):
    """The runs this user may see: their own; as a reviewer, those whose every call they may see; all for readers."""
    queryset = queryset if queryset is not None else Run.objects.all()
    if not logged_in(user):
        return queryset.none()
    if reads_record(user):
        return queryset
    own = Q(requested_by=user)
    if not is_reviewer(user):
        return queryset.filter(own)
    hidden = ToolCall.objects.filter(run=OuterRef("pk")).exclude(reviews_group_q(user))
    return queryset.filter(own | ~Exists(hidden))


def can_see_run(user, run: Run | int) -> bool:
    return visible_runs(user).filter(pk=getattr(run, "pk", run)).exists()


def can_start_run(user) -> tuple[bool, str]:
    return may_act(user)


def decides_runs_of(user, requester) -> tuple[bool, str]:
    """Whether this user could decide the calls of a run `requester` requests (New run warns them beforehand)."""
    allowed, why = may_review(user)
    if not allowed:
        return False, why
    if requester is not None and requester.pk == user.pk:
        return False, "You will be this run's requester, so you cannot decide its calls: another reviewer must."
    return True, ""


def can_act_on_run(user, run: Run) -> tuple[bool, str]:
    """Retry or cancel: the run's requester, or a reviewer who may see it."""
    allowed, why = may_act(user)
    if not allowed:
        return False, why
    if requested(user, run) or (is_reviewer(user) and can_see_run(user, run)):
        return True, ""
    return False, "Only the requester of this run or a reviewer who may see it can retry or cancel it."
