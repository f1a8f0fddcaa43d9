"""Policy: whether a proposed call runs, waits for people (how many, which group), or is refused.

The tier sets the default; stored PolicyRule rows refine it, in order, and the
tool's ToolSetting names who may decide. Evaluation fails closed: a rule that
cannot be evaluated, or anything else that raises, holds the call for review.
Shadow rules never decide; shadow_outcomes() says what they would have decided.

Beside it: snapshot.py, the rules read once per change; turn_rules.py, which model turns pause; friction.py,
the high-impact gate; admin.py, the admin pages of the policy rules, tool settings and turn rules."""

import logging
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

from approvals.models import PolicyRule, Tier
from approvals.policy import snapshot as policy_snapshot
from approvals.tools import Tool

log = logging.getLogger(__name__)

RUN = "run"
REVIEW = "review"
FORBID = "forbid"

TIER_DEFAULTS = {
    Tier.READ_ONLY: RUN,
    Tier.REVERSIBLE: RUN,
    Tier.APPROVAL: REVIEW,
    Tier.FORBIDDEN: FORBID,
}


@dataclass(frozen=True)
class PolicyOutcome:
    action: str
    reason: str
    rule_id: int | None = None
    required_approvals: int = 1
    # Only members of this group may decide (None: any reviewer).
    group_id: int | None = None
    group_name: str = ""
    # The rule that sent it to review marks it high impact (approvals/policy/friction.py).
    high_impact: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


class RuleError(Exception):
    pass


def rule_number(value) -> Decimal:
    """A value as the rules compare numbers (a Decimal); raises RuleError for a boolean or a non-number."""
    if isinstance(value, bool):
        raise RuleError("a boolean is not a number")
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise RuleError(f"{value!r} is not a number")


def rule_matches(rule: PolicyRule, arguments: dict) -> bool:
    op = rule.operator
    if op == PolicyRule.Operator.ANY:
        return True
    if rule.field not in arguments:
        raise RuleError(f"argument {rule.field!r} is missing")
    actual = arguments[rule.field]
    if op == PolicyRule.Operator.EQ:
        return actual == rule.value
    if op == PolicyRule.Operator.NE:
        return actual != rule.value
    left, right = rule_number(actual), rule_number(rule.value)
    compared: dict[str, bool] = {
        PolicyRule.Operator.LE: left <= right,
        PolicyRule.Operator.LT: left < right,
        PolicyRule.Operator.GE: left >= right,
        PolicyRule.Operator.GT: left > right,
    }
    return compared[op]


def _review(reason: str, rule: PolicyRule | None, tool_name: str) -> PolicyOutcome:
    if rule is not None and rule.group_id:
        group = rule.group
    else:
        group = policy_snapshot.tool_setting(tool_name, fresh=False).group
    return PolicyOutcome(
        REVIEW,
        reason,
        rule.pk if rule is not None else None,
        max(1, rule.required_approvals) if rule is not None else 1,
        group.pk if group else None,
        group.name if group else "",
        rule is not None and rule.high_impact,
    )


def rules_for(tool_names) -> dict[str, list[PolicyRule]]:
    """The enabled rules, live and shadow, of these tools, in their order (from the snapshot of policy)."""
    snapshot = policy_snapshot.current()
    return {name: list(snapshot.rules.get(name, ())) for name in tool_names}


def _evaluate(tool: Tool, arguments: dict, rules: list[PolicyRule] | None) -> PolicyOutcome:
    default = TIER_DEFAULTS[Tier(tool.tier)]
    if default == FORBID:
        return PolicyOutcome(FORBID, f"{tool.name} is forbidden by its tier")
    if rules is None:
        rules = rules_for([tool.name])[tool.name]
    for rule in (r for r in rules if not r.shadow):
        try:
            matched = rule_matches(rule, arguments)
        except RuleError as exc:
            return _review(f"rule “{rule.name}” could not be evaluated ({exc}); held for review", rule, tool.name)
        if not matched:
            continue
        if rule.outcome == PolicyRule.Outcome.RUN:
            return PolicyOutcome(RUN, f"rule “{rule.name}”", rule.pk)
        if rule.outcome == PolicyRule.Outcome.FORBID:
            return PolicyOutcome(FORBID, f"rule “{rule.name}”", rule.pk)
        return _review(f"rule “{rule.name}”", rule, tool.name)
    if default == REVIEW:
        return _review(f"{Tier(tool.tier).label} tier", None, tool.name)
    return PolicyOutcome(default, f"{Tier(tool.tier).label} tier")


def _tool_group(tool: Tool) -> tuple[int | None, str]:
    try:
        group = policy_snapshot.tool_setting(tool.name).group
    except Exception:
        return None, ""
    return (group.pk, group.name) if group else (None, "")


def evaluate(tool: Tool, arguments: dict, *, rules: list[PolicyRule] | None = None) -> PolicyOutcome:
    """Decide a call (`rules`: the tool's, from rules_for(), if already read). Never raises: an error holds it."""
    try:
        return _evaluate(tool, arguments, rules)
    except Exception as exc:  # fail closed, whatever went wrong
        log.warning("policy evaluation failed for %s: %s", tool.name, exc)
        group_id, group_name = _tool_group(tool)
        return PolicyOutcome(
            REVIEW, f"policy could not be evaluated ({exc}); held for review", group_id=group_id, group_name=group_name
        )


def shadow_outcomes(
    tool: Tool, arguments: dict, *, rules: list[PolicyRule] | None = None
) -> list[tuple[PolicyRule, str]]:
    """What each enabled shadow rule of this tool would decide, for the rules whose condition holds.

    A shadow rule never affects a call: if it cannot be evaluated, it is skipped.
    """
    try:
        rules = [r for r in (rules_for([tool.name])[tool.name] if rules is None else rules) if r.shadow]
    except Exception as exc:
        log.warning("shadow rules could not be read for %s: %s", tool.name, exc)
        return []
    results = []
    for rule in rules:
        try:
            if rule_matches(rule, arguments):
                results.append((rule, rule.outcome))
        except RuleError:
            continue
    return results
