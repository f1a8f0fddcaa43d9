"""Who is who (the package's docstring says what each may do): logged in, reviewer, auditor, record reader,
requester; whether someone may act or review at all; the groups a call is restricted to."""

from django.db.models import Q

from ..models import Run

REVIEW_PERMISSION = "approvals.review_toolcall"
READ_PERMISSION = "approvals.view_toolcall"
AUDITORS = "auditors"


def logged_in(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def is_reviewer(user) -> bool:
    return logged_in(user) and user.has_perm(REVIEW_PERMISSION)


def is_auditor(user) -> bool:
    """Member of the auditors group; remembered on the user object, as Django remembers permissions."""
    if not logged_in(user):
        return False
    if not hasattr(user, "_reviewhub_auditor"):
        user._reviewhub_auditor = any(group.name == AUDITORS for group in user.groups.all())
    return user._reviewhub_auditor


def reads_record(user) -> bool:
    return logged_in(user) and user.has_perm(READ_PERMISSION)


def may_act(user) -> tuple[bool, str]:
    """Whether this user may change anything at all; every other rule about acting starts here."""
    if not logged_in(user):
        return False, "Log in first."
    if is_auditor(user):
        return False, "Auditors read the record and change nothing."
    return True, ""


def in_group(user, group_id: int | None) -> bool:
    """Whether the user belongs to the group a call is restricted to (superusers belong everywhere)."""
    if group_id is None or user.is_superuser:
        return True
    return any(group.pk == group_id for group in user.groups.all())  # uses groups prefetched by a caller


def requested(user, run: Run) -> bool:
    return run.requested_by_id is not None and run.requested_by_id == user.pk


def may_review(user) -> tuple[bool, str]:
    """Whether this user may decide calls at all (which ones: can_decide)."""
    allowed, why = may_act(user)
    if not allowed:
        return False, why
    if not is_reviewer(user):
        return False, "You are not a reviewer."
    return True, ""


def reviews_group_q(user) -> Q:
    return Q(review_group__isnull=True) | Q(review_group__in=user.groups.all())
