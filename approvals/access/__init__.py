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

The rules, by subject: people.py (who is who; may act, may review), calls.py, runs.py, identities.py (what an
agent's token reaches), operations.py (notifications, metrics, practice calls, the admin, tokens, webhooks).
Callers import them from here.
"""

from .calls import (
    can_decide,
    can_decide_in_chat,
    can_settle,
    can_undo,
    chat_decisions_allowed,
    readable_calls,
    reviewers_for,
    row_refusal,
    shown_on_card_of,
    visible_calls,
)
from .identities import (
    agent_calls,
    agent_gateways,
    agent_runs,
    agent_tools,
)
from .operations import (
    CATCH_RATE_PERMISSION,
    PRACTICE_PERMISSION,
    can_add_learned_rule,
    can_list_practice_calls,
    can_read_catch_rates,
    can_read_metrics,
    can_redeliver_webhooks,
    can_revoke_tokens,
    can_set_notifications,
    may_change_in_admin,
    practice_calls_for,
)
from .people import (
    AUDITORS,
    READ_PERMISSION,
    REVIEW_PERMISSION,
    in_group,
    is_auditor,
    is_reviewer,
    may_act,
    may_review,
    reads_record,
)
from .runs import (
    can_act_on_run,
    can_see_run,
    can_start_run,
    decides_runs_of,
    visible_runs,
)

__all__ = [
    "AUDITORS",
    "CATCH_RATE_PERMISSION",
    "PRACTICE_PERMISSION",
    "READ_PERMISSION",
    "REVIEW_PERMISSION",
    "agent_calls",
    "agent_gateways",
    "agent_runs",
    "agent_tools",
    "can_act_on_run",
    "can_add_learned_rule",
    "can_decide",
    "can_decide_in_chat",
    "can_list_practice_calls",
    "can_read_catch_rates",
    "can_read_metrics",
    "can_redeliver_webhooks",
    "can_revoke_tokens",
    "can_see_run",
    "can_set_notifications",
    "can_settle",
    "can_start_run",
    "can_undo",
    "chat_decisions_allowed",
    "decides_runs_of",
    "in_group",
    "is_auditor",
    "is_reviewer",
    "may_act",
    "may_change_in_admin",
    "may_review",
    "practice_calls_for",
    "readable_calls",
    "reads_record",
    "reviewers_for",
    "row_refusal",
    "shown_on_card_of",
    "visible_calls",
    "visible_runs",
]
