"""Shadow rules: what each would have decided, set beside what people decided. They change nothing.

The gate stores what they would have decided (ShadowResult rows, with the step: steps.step_store);
shadow_replay() writes the same rows for a rule added later, over calls already proposed; learned_rule_add()
adds a rule learned from decisions (approvals/insight/learned.py) in shadow mode and replays it."""

from dataclasses import dataclass

from django.contrib.admin.models import ADDITION, LogEntry
from django.db import transaction
from django.db.models import Max

from approvals.insight import Agreement, Window, learned
from approvals.policy import RuleError, rule_matches, rule_number

from ..access import can_add_learned_rule
from ..models import PolicyRule, PolicyStamp, ShadowResult, ToolCall
from .errors import RuleAlreadyAdded, RuleNotProposed, require


def shadow_settle(*, call: ToolCall, verdict: str) -> None:
    """Put the people's final verdict next to what the shadow rules would have done."""
    for result in ShadowResult.objects.filter(tool_call=call, verdict=""):
        result.verdict = verdict
        result.agreed = ShadowResult.agreement(result.outcome, verdict)
        result.save(update_fields=["verdict", "agreed"])


def shadow_replay(*, rule: PolicyRule, window: Window) -> dict[str, int]:
    """What this shadow rule would have decided on the window's calls of its tool that people settled or
    that still wait (practice calls left out), as ShadowResult rows: those settled with the verdict and the
    agreement the gate's rows get once decided, those waiting with none yet (shadow_settle() fills them in).
    Returns the rule's counts (PolicyRule.shadow_counts: matched, compared, agreed)."""
    calls = (
        learned.window_calls(window, rule.tool_name)
        .annotate(verdict=learned.settled_verdict())
        .exclude(verdict__isnull=True, status__in=[s for s in ToolCall.Status if s != ToolCall.Status.PENDING])
        .exclude(shadow_results__rule=rule)
        .only("pk", "arguments")
    )
    results = []
    for call in calls.iterator():
        try:
            if not rule_matches(rule, call.arguments if isinstance(call.arguments, dict) else {}):
                continue
        except RuleError:
            continue  # the gate skips a shadow rule that cannot be evaluated, and so does the replay
        verdict = call.verdict or ""
        agreed = ShadowResult.agreement(rule.outcome, verdict) if verdict else None
        results.append(ShadowResult(rule=rule, tool_call=call, outcome=rule.outcome, verdict=verdict, agreed=agreed))
    ShadowResult.objects.bulk_create(results, batch_size=500)
    return rule.shadow_counts()


@dataclass(frozen=True)
class Added(Agreement):
    rule: PolicyRule
    proposal: learned.Proposal

    @property
    def agreement(self) -> str:
        """ "it would have agreed with 48 of 48 past decisions (100%)" """
        said = f"it would have agreed with {self.agreed} of {self.compared} past decisions"
        return said + (f" ({self.percent}%)" if self.percent is not None else "")

    @property
    def summary(self) -> str:
        return (
            f"Added “{self.rule.name}” in shadow mode: {self.agreement}. It only records what it would decide; "
            "every call still waits for review until someone turns shadow off."
        )


@transaction.atomic
def learned_rule_add(*, user, window: Window, tool: str, field: str, value: str) -> Added:
    """Add the rule the window's decisions propose for `tool` (approvals/insight/learned.py) in shadow mode, and
    replay it over the window's calls; never enabled for real decisions (a person turns shadow off in the
    admin). `field` and `value` are the condition the person was shown, as posted: a proposal that is not the
    decisions' (unknown tool, another field, a tampered threshold) adds nothing (RuleNotProposed), nor does
    one that a rule already covers (RuleAlreadyAdded), so a second accept adds no second rule."""
    require(can_add_learned_rule(user))
    # Every change of policy writes this one row (policy_snapshot.changed): locking it first makes two
    # accepts of one proposal take turns, and the second finds the first's rule.
    PolicyStamp.objects.get_or_create(pk=1, defaults={"stamp": "new"})
    PolicyStamp.objects.select_for_update().get(pk=1)
    proposal = learned.proposal_for(window, tool=tool)
    if proposal is None:
        if (rule := learned.covering_rule(tool, field, _posted_number(value))) is not None:
            raise RuleAlreadyAdded(rule)
        raise RuleNotProposed(f"No rule is proposed for “{tool}” from these days' decisions: nothing was added.")
    if field != proposal.field or not _same_value(value, proposal.value):
        shown = f"{field} <= {value}" if field else "always"
        raise RuleNotProposed(
            f"The decisions propose “{proposal.condition}” for {tool}, not “{shown}”: nothing was added."
        )
    last = PolicyRule.objects.filter(tool_name=tool).aggregate(last=Max("order"))["last"]
    rule = proposal.rule(order=100 if last is None else last + 10)  # after the tool's rules: they decide first
    rule.full_clean()
    rule.save()
    counts = shadow_replay(rule=rule, window=window)
    LogEntry.objects.log_actions(
        user_id=user.pk,
        queryset=[rule],
        action_flag=ADDITION,
        change_message=f"Added in shadow mode from Insight: {proposal.sentence}",
        single_object=True,
    )
    return Added(rule=rule, proposal=proposal, **counts)


def _posted_number(value: str):
    """The posted threshold as the rules compare numbers, or None (not a finite number)."""
    try:
        number = rule_number(value) if value else None
    except RuleError:
        return None
    return number if number is not None and number.is_finite() else None


def _same_value(posted: str, proposed) -> bool:
    """Whether the threshold posted is the proposal's (both absent for "always")."""
    if proposed is None:
        return posted in ("", None)
    number = _posted_number(posted)
    return number is not None and number == rule_number(proposed)
