"""Who may see and act on runs and the calls in them: the one place that decides.

Every view, socket, service and admin page asks here; the server checks on every
request, and templates only hide what a user may not use.

Who is who
- A reviewer has the review permission (approvals.review_toolcall).
- An auditor is in the group "auditors": reads everything, changes nothing,
  whatever else they hold (even superuser).
- A record reader has the admin's view permission on tool calls (auditors, superusers):
  reads every run and call, on the site as in the admin.
- The requester of a run is the user it was started for.

Seeing
- A call: the reviewers of its group (the call's group from ToolSetting.group,
  PolicyRule.group or an escalation; no group: every reviewer), the requester of
  its run, and record readers. visible_calls() is the reviewers' part (the queue
  and its pushes), readable_calls() all of it (the call page).
- A run shows every call in it, so a reviewer sees a run only when they may see
  every call in it. Its requester and record readers always see it. Who may not
  see a run gets 404 on its page and its actions, does not find it in /runs/,
  and its socket is refused. Users without review permission see only their own runs.

Acting (never an anonymous, inactive or auditor user)
- start a run: any other logged-in user (its requester: they, or in the embedded demo
  its agent account, settings.REVIEWHUB_DEMO_RUNS_AS).
- decide or claim a call: a reviewer of the call's group who did not request its
  run, once per review round.
- settle a call whose outcome is unknown (its claim lapsed without a report): the same
  reviewers (can_settle).
- decide from a chat message (Slack): the same, only for tools that allow it
  (Tool.chat_decisions), never for a call that needs several approvals, was escalated
  or carries a warning.
- undo an executed reversible call: the same, with the call's group or, for a call
  that ran without review, the tool's group (ToolSetting.group).
- retry or cancel a run: its requester, or a reviewer who may see it.
- add a rule Insight proposes from past decisions (in shadow mode): who may add policy
  rules in the admin (can_add_learned_rule); Insight's readers see the proposals.

| may ...              | anonymous | no permission  | reviewer                          | auditor | superuser |
| see a run, its calls | no        | their own runs | own runs, runs whose calls they   | all     | all       |
|                      |           |                | may all see                       |         |           |
| start a run          | no        | yes            | yes                               | no      | yes       |
| decide, claim, undo  | no        | no             | calls of their group, not of runs | no      | yes       |
|                      |           |                | they requested                    |         |           |
| retry, cancel        | no        | their own runs | own runs, runs they may see       | no      | yes       |

Agents that run elsewhere (the agent API, remote/) act with a token, never a session. A token
belongs to one agent identity, whose user account is the requester of its runs (so nobody's
no-self-approval rule is bypassed: that account may never decide). It sees and acts on only
its own declared tools (agent_tools) and the calls of the runs it requested and advances
(agent_calls); anything else is answered as if it did not exist (404). An MCP gateway (gateway/) is
such an agent: its HTTP endpoint answers only to its own agent's tokens (agent_gateways).

In the admin, Django's model permissions decide, and auditors change nothing there
either, in any ModelAdmin, Django's own user admin included: every registered ModelAdmin
asks may_change_in_admin() (the admin site mixes auditors.AuditorsOnlyLook into each).
Revoking an agent's token (can_revoke_tokens) and redelivering a webhook
(can_redeliver_webhooks) are decided here too. Where a socket may come from
(its Origin) is approvals/lib/origins.py's check; who may open it is decided here.

Every kind of pause (a tool call, a model turn, a checkpoint, a tool's question) is a
ToolCall row, so the same rules decide them all. can_decide() and
can_undo() read only the pause's `run`, `review_group`, `tool_name` and, to
decide, `is_pending`, `review_round` and `decisions`; visible_calls() and
readable_calls() filter any queryset on `review_group` and `run__requested_by`.
Another kind of pause with those fields is judged by the same rules.

A revision's card shows the round before it (approvals/kinds/revision.py) only where everyone who
may see the card may see that call too (shown_on_card_of): the same run, no group or the same.
"""

import hmac
import ipaddress

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Exists, OuterRef, Q

from approvals.policy import snapshot as policy_snapshot
from approvals.policy.friction import friction_for

from .models import Run, ToolCall
from .planted import planted
from .tools import registry

REVIEW_PERMISSION = "approvals.review_toolcall"
READ_PERMISSION = "approvals.view_toolcall"
AUDITORS = "auditors"


def _logged_in(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def is_reviewer(user) -> bool:
    return _logged_in(user) and user.has_perm(REVIEW_PERMISSION)


def is_auditor(user) -> bool:
    """Member of the auditors group; remembered on the user object, as Django remembers permissions."""
    if not _logged_in(user):
        return False
    if not hasattr(user, "_reviewhub_auditor"):
        user._reviewhub_auditor = any(group.name == AUDITORS for group in user.groups.all())
    return user._reviewhub_auditor


def reads_record(user) -> bool:
    return _logged_in(user) and user.has_perm(READ_PERMISSION)


def may_act(user) -> tuple[bool, str]:
    """Whether this user may change anything at all; every other rule about acting starts here."""
    if not _logged_in(user):
        return False, "Log in first."
    if is_auditor(user):
        return False, "Auditors read the record and change nothing."
    return True, ""


def in_group(user, group_id: int | None) -> bool:
    """Whether the user belongs to the group a call is restricted to (superusers belong everywhere)."""
    if group_id is None or user.is_superuser:
        return True
    return any(group.pk == group_id for group in user.groups.all())  # uses groups prefetched by a caller


def _requested(user, run: Run) -> bool:
    return run.requested_by_id is not None and run.requested_by_id == user.pk


# --- calls --------------------------------------------------------------------------------------


def _reviews_group_q(user) -> Q:
    return Q(review_group__isnull=True) | Q(review_group__in=user.groups.all())


def visible_calls(user, queryset=None):
    """The calls this user may review: the queue and its live pushes."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not is_reviewer(user):
        return queryset.none()
    if user.is_superuser:
        return queryset
    return queryset.filter(_reviews_group_q(user))


def readable_calls(user, queryset=None):
    """The calls this user may read: those they may review, their own runs' calls, or all for record readers."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not _logged_in(user):
        return queryset.none()
    if reads_record(user):
        return queryset
    own = Q(run__requested_by=user)
    return queryset.filter(own | _reviews_group_q(user)) if is_reviewer(user) else queryset.filter(own)


def may_review(user) -> tuple[bool, str]:
    """Whether this user may decide calls at all (which ones: can_decide)."""
    allowed, why = may_act(user)
    if not allowed:
        return False, why
    if not is_reviewer(user):
        return False, "You are not a reviewer."
    return True, ""


def _may_review(user, run: Run, verb: str) -> tuple[bool, str]:
    allowed, why = may_review(user)
    if not allowed:
        return False, why
    if _requested(user, run):
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
    if call.is_pending and _logged_in(user) and _requested(user, call.run):
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


# --- runs ---------------------------------------------------------------------------------------


def visible_runs(user, queryset=None):
    """The runs this user may see: their own; as a reviewer, those whose every call they may see; all for readers."""
    queryset = queryset if queryset is not None else Run.objects.all()
    if not _logged_in(user):
        return queryset.none()
    if reads_record(user):
        return queryset
    own = Q(requested_by=user)
    if not is_reviewer(user):
        return queryset.filter(own)
    hidden = ToolCall.objects.filter(run=OuterRef("pk")).exclude(_reviews_group_q(user))
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
    if _requested(user, run) or (is_reviewer(user) and can_see_run(user, run)):
        return True, ""
    return False, "Only the requester of this run or a reviewer who may see it can retry or cancel it."


# --- agents that run elsewhere --------------------------------------------------------------------


def agent_calls(agent_user, queryset=None):
    """The calls an agent identity may see and act on through the API: those of runs it requested and advances."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not _logged_in(agent_user):
        return queryset.none()
    # Never a practice call (approvals/planted.py), whatever run it is in.
    return planted.hide(queryset.filter(run__requested_by=agent_user, run__advanced_by=Run.AdvancedBy.REMOTE))


def agent_runs(agent_user, queryset=None):
    """The runs (threads) an agent identity may propose into: those it requested and advances."""
    queryset = queryset if queryset is not None else Run.objects.all()
    if not _logged_in(agent_user):
        return queryset.none()
    return queryset.filter(requested_by=agent_user, advanced_by=Run.AdvancedBy.REMOTE)


def agent_tools(agent_user, queryset):
    """An agent identity's own tool declarations (any model with an `agent` whose `user` is the identity's)."""
    if not _logged_in(agent_user):
        return queryset.none()
    return queryset.filter(agent__user=agent_user)


# --- operations -----------------------------------------------------------------------------------


def can_set_notifications(user) -> tuple[bool, str]:
    """Choose how to hear of new calls: whoever may decide calls (not auditors, not other users)."""
    return may_review(user)


def can_read_metrics(*, authorization: str, address: str) -> bool:
    """/metrics: a scraper that sends `Authorization: Bearer <METRICS_TOKEN>`, or comes from one of
    METRICS_ALLOWED_NETWORKS. With neither configured, nobody (logged in or not: it is not a page)."""
    token = settings.METRICS_TOKEN
    if token and hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        return True
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(client in ipaddress.ip_network(network, strict=False) for network in settings.METRICS_ALLOWED_NETWORKS)


# --- practice calls (practice/) ------------------------------------------------------------------

PRACTICE_PERMISSION = "practice.audit_practice"  # lists practice calls before they are decided
CATCH_RATE_PERMISSION = "approvals.view_auditevent"  # reads the catch rates, as it reads the insight page


def can_list_practice_calls(user) -> bool:
    """Who may know which waiting calls are practice ones: the dedicated permission only (auditors hold it)."""
    return _logged_in(user) and user.has_perm(PRACTICE_PERMISSION)


def can_read_catch_rates(user) -> bool:
    return _logged_in(user) and user.has_perm(CATCH_RATE_PERMISSION)


def practice_calls_for(user, queryset):
    """The practice calls a user may list: all of them with the dedicated permission; with the insight's
    permission, only those decided (or expired); nobody else any."""
    if can_list_practice_calls(user):
        return queryset
    if not can_read_catch_rates(user):
        return queryset.none()
    return queryset.filter(~Q(outcome="waiting") | Q(tool_call__status=ToolCall.Status.EXPIRED))


def may_change_in_admin(user) -> bool:
    """Whether the admin may let this user add, change, delete or run an action at all (Django's model
    permissions decide the rest): never an auditor, whatever else they hold (even superuser)."""
    return may_act(user)[0]


def can_add_learned_rule(user) -> tuple[bool, str]:
    """Add a rule Insight proposes from decisions (approvals/insight/learned.py), in shadow mode: who may add policy
    rules in the admin (staff with approvals.add_policyrule), never an auditor. Reading the proposals is
    reading Insight."""
    allowed, why = may_act(user)
    if not allowed:
        return False, why
    if not (user.is_staff and user.has_perm("approvals.add_policyrule")):
        return False, "Only people who may add policy rules in the admin can add a proposed rule."
    return True, ""


def can_revoke_tokens(user) -> bool:
    """Revoke an agent's token in the admin: who may change tokens (superusers), never an auditor."""
    return may_change_in_admin(user) and user.has_perm("remote.change_agenttoken")


def can_redeliver_webhooks(user) -> bool:
    return may_change_in_admin(user) and user.has_perm("remote.change_webhookdelivery")


def agent_gateways(agent_user, queryset):
    """The MCP gateways an agent identity's token may use: its own (gateway/http.py asks)."""
    if not _logged_in(agent_user):
        return queryset.none()
    return queryset.filter(agent__user=agent_user)
