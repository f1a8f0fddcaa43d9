"""Policy: whether a proposed call runs, waits for a person, or is refused.

The tier sets the default; stored PolicyRule rows refine it. Evaluation fails
closed: anything that raises while evaluating holds the call for review.
"""

import logging
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

from .models import PolicyRule, Tier
from .tools import Tool

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

    def as_dict(self) -> dict:
        return asdict(self)


class RuleError(Exception):
    pass


def _number(value):
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
    left, right = _number(actual), _number(rule.value)
    return {
        PolicyRule.Operator.LE: left <= right,
        PolicyRule.Operator.LT: left < right,
        PolicyRule.Operator.GE: left >= right,
        PolicyRule.Operator.GT: left > right,
    }[op]


def _evaluate(tool: Tool, arguments: dict) -> PolicyOutcome:
    default = TIER_DEFAULTS[Tier(tool.tier)]
    if default == FORBID:
        return PolicyOutcome(FORBID, f"{tool.name} is forbidden by its tier")
    for rule in PolicyRule.objects.filter(enabled=True, tool_name=tool.name):
        if not rule_matches(rule, arguments):
            continue
        if rule.outcome == PolicyRule.Outcome.RUN and tool.tier == Tier.APPROVAL and rule.required_approvals == 1:
            return PolicyOutcome(RUN, f"rule “{rule.name}”", rule.pk)
        if rule.outcome == PolicyRule.Outcome.FORBID:
            return PolicyOutcome(FORBID, f"rule “{rule.name}”", rule.pk)
        if rule.outcome == PolicyRule.Outcome.REVIEW:
            return PolicyOutcome(REVIEW, f"rule “{rule.name}”", rule.pk, max(1, rule.required_approvals))
    return PolicyOutcome(default, f"{Tier(tool.tier).label} tier")


def evaluate(tool: Tool, arguments: dict) -> PolicyOutcome:
    """Decide a call. Never raises: an error holds the call for review."""
    try:
        return _evaluate(tool, arguments)
    except Exception as exc:  # fail closed, whatever went wrong
        log.warning("policy evaluation failed for %s: %s", tool.name, exc)
        return PolicyOutcome(REVIEW, f"policy could not be evaluated ({exc}); held for review")
