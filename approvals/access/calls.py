"""Seeing and acting on calls: the queue, deciding, settling, undoing, chat decisions, whom to notify."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Q

from approvals.policy import snapshot as policy_snapshot
from approvals.policy.friction import friction_for

from ..models import Run, ToolCall
from ..tools import registry
from .people import AUDITORS, in_group, is_reviewer, logged_in, may_review, reads_record, requested, reviews_group_q
from .runs import can_see_run


def visible_calls(user, queryset=None):
    """The calls this user may review: the queue and its live pushes."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not is_reviewer(user):
        return queryset.none()
    if user.is_superuser:
        return queryset
    return queryset.filter(reviews_group_q(user))


def readable_calls(user, queryset=None):
    """The calls this user may read: those they may review, their own runs' calls, or all for record readers."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not logged_in(user):
        return queryset.none()
    if reads_record(user):
        return queryset
    own = Q(run__requested_by=user)
    return queryset.filter(own | reviews_group_q(user)) if is_reviewer(user) else queryset.filter(own)


def _may_review(user, run: Run, verb: str) -> tuple[bool, str]:
    allowed, why = may_review(user)
    if not allowed:
        return False, why
    if requested(user, run):
        return False, f"You requested this run, so you cannot {verb} its calls."
    return True, ""


def can_decide(user, call: ToolCall) -> tuple[bool, str]:
    allowed, why = _may_review(user, call.run, "decide")
    if not allowed:
        return False, why
    if not in_group(user, call.review_group_id):
        return False, f"Only members of the group “{call.review_group}” may decide this call."
    if call.is_pending and any(d.round == call.review_round and d.reviewer_id == user.pk for d in call.all_decisions()):
        return False, "You already approved this call; it needs the approval of another reviewer."
    return True, ""


def can_settle(user, call: ToolCall) -> tuple[bool, str]:
    """Say what happened to a call whose outcome is unknown (it ran, run it now, fail the run): whoever may
    decide calls of its group and did not request its run."""
    allowed, why = _may_review(user, call.run, "settle")
    if not allowed:
        return False, why
    if not in_group(user, call.review_group_id):
        return False, f"Only members of the group “{call.review_group}” may settle this call."
    return True, ""


def row_refusal(user, call: ToolCall) -> str:
    """What a queue row says when this viewer may not decide the call, from what the row already holds (the run's
    requester; calls of groups the viewer is not in are not in their queue at all). The card says every reason."""
    if call.is_pending and logged_in(user) and requested(user, call.run):
        return "Your run: another reviewer decides"
    return ""


def shown_on_card_of(call: ToolCall, other: ToolCall) -> bool:
    """Whether another call may be shown on this call's card (a revision shows the round before it), to whoever
    sees this card: a call of the same run that everyone who may see this call may see (no group, or the same)."""
    return other.run_id == call.run_id and other.review_group_id in (None, call.review_group_id)


def chat_decisions_allowed(call: ToolCall) -> tuple[bool, str]:
    """Whether anyone may decide this call from a chat message: a tool that allows it, a call one approval
    settles, not escalated, whose facts carry no warning, not high impact. Everything else is decided in ReviewHub."""
    tool = registry.for_call(call)
    if tool is None or not tool.chat_decisions:
        return False, "This tool's calls are decided in ReviewHub, not in chat."
    if call.required_approvals > 1 or call.escalated_at is not None or call.warning or friction_for(call):
        return False, "This call needs a closer look; decide it in ReviewHub."
    return True, ""


def can_decide_in_chat(user, call: ToolCall) -> tuple[bool, str]:
    """Approve or reject from a chat message (Slack's buttons): where chat decisions are allowed, as can_decide()."""
    allowed, why = chat_decisions_allowed(call)
    if not allowed:
        return False, why
    return can_decide(user, call)


def _undo_group(call: ToolCall) -> Group | None:
    """Who may undo a call: the group that reviewed it or, if it ran without review, the tool's group."""
    return call.review_group if call.review_group_id else policy_snapshot.tool_setting(call.tool_name).group


def can_undo(user, call: ToolCall) -> tuple[bool, str]:
    allowed, why = _may_review(user, call.run, "undo")
    if not allowed:
        return False, why
    group = _undo_group(call)
    if group is not None and not in_group(user, group.pk):
        return False, f"Only members of the group “{group}” may undo this call."
    if not can_see_run(user, call.run):
        return False, "You may not see this run."
    return True, ""


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
    return users.exclude(groups__name=AUDITORS).distinct().order_by("pk")
