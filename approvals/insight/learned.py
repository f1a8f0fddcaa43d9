"""Rules learned from decisions: which calls people always approved as proposed, as rules they could add.

Over a window of days (Insight's, 30 by default) the learner reads, per tool, the calls proposed in it that a
person settled: the decision that settled the call's last review round (an expiry counts, as the system's). A
call is a *plain approval* when every decision on it is an approval (no edit, no reject or respond, no
expiry) and it was not undone since. Practice calls (approvals/planted.py) are not history; model turns,
checkpoints and questions are not tool calls a rule decides.

- A tool with a numeric key field (its first, as the triage list's amount: `amount` for refunds): the
  threshold is the largest value of a plain approval below the smallest value of any other settled call
  (or the largest of all, when every settled call was a plain approval). Every settled call at or under it
  was a plain approval; the proposal is `field <= threshold`.
- A tool without one: only when every settled call was a plain approval; the proposal is "always".

A proposal needs at least `min_calls` plain approvals under it (settings.LEARN_MIN_CALLS, 20 by default).
Its outcome is "run without review", written in the rule language of approvals/policy/ (a PolicyRule's
field, operator and value; rule_matches() is what the replay asks). That language names a tool, not an
agent: a learned rule would run every agent's calls of the tool, so the evidence is every agent's calls
(and the proposal says which agents they came from). A rule that already covers the proposal (a
run-without-review rule of the tool, enabled or not, shadow or not, always or with `<=` / `<` at or above
the threshold) means it is not proposed again.

Nothing here writes: services.learned_rule_add() adds a proposal as a shadow rule and replays it.
"""

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Subquery

from approvals.insight import Window
from approvals.lib.text import key_text
from approvals.models import Decision, PolicyRule, ToolCall
from approvals.planted import planted
from approvals.policy import RuleError, rule_number
from approvals.tools import Tool, registry
from approvals.web.triage import amount_field

PLAIN = "plain"  # a call every decision approved as proposed
LABELS = {  # what the settled calls above a threshold were, as the proposal counts them
    Decision.Verdict.EDIT.value: "edited",
    Decision.Verdict.REJECT.value: "rejected or sent back",
    Decision.Verdict.EXPIRE.value: "expired",
    "mixed": "approved after an edit or another verdict",
    "undone": "approved, then undone",
    PLAIN: "approved as proposed",
}


@dataclass(frozen=True)
class Settled:
    """One call of the window that people settled."""

    pk: int
    agent: str
    arguments: dict | None
    outcome: str  # PLAIN, or a key of LABELS


@dataclass(frozen=True)
class Proposal:
    tool: str
    field: str  # "" for "always"
    value: object  # the threshold as the calls' arguments held it (None for "always")
    approved: int  # plain approvals under it: every settled call it covers
    agents: tuple[tuple[str, int], ...]  # the agents those calls came from, most first
    others: tuple[tuple[str, int], ...] = ()  # the settled calls above it, by what they were
    money: bool = False
    days: int = 30
    window: Window | None = dataclasses.field(default=None, compare=False)

    @property
    def operator(self) -> str:
        return PolicyRule.Operator.LE.value if self.field else PolicyRule.Operator.ANY.value

    @property
    def limit(self) -> str:
        """The threshold as people read it: $25.00, or 25."""
        return str(key_text(self.value, is_money=self.money)) if self.field else ""

    @property
    def condition(self) -> str:
        """The rule's condition as the admin shows it: amount <= 25, or always."""
        return f"{self.field} <= {key_text(self.value)}" if self.field else "always"

    @property
    def value_text(self) -> str:
        """The threshold as the form posts it back (JSON: 25, 24.5), "" for "always"."""
        return "" if self.value is None else json.dumps(self.value)

    @property
    def key(self) -> str:
        return f"{self.tool}-{self.field or 'always'}"

    @property
    def agents_text(self) -> str:
        names = [name for name, _ in self.agents]
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"the {joined} agent{'s' if len(names) > 1 else ''}"

    @property
    def sentence(self) -> str:
        """ "You approved 48 of 48 issue_refund calls of at most $25.00 from the support agent in 30 days,
        0 edits: run them without review?" """
        scope = f" of at most {self.limit}" if self.field else ""
        plural = "s" if self.approved != 1 else ""
        return (
            f"You approved {self.approved} of {self.approved} {self.tool} call{plural}{scope} from {self.agents_text}"
            f" in {self.days} days, 0 edits: run them without review?"
        )

    @property
    def others_text(self) -> str:
        """What happened to the settled calls above the threshold: "above $25.00: 2 edited, 1 rejected"."""
        if not self.others:
            return ""
        counts = ", ".join(f"{n} {LABELS.get(what, what)}" for what, n in self.others)
        return f"Above {self.limit}: {counts}."

    @property
    def name(self) -> str:
        """The rule's name once added."""
        scope = f" of at most {self.limit}" if self.field else ""
        return f"{self.tool}{scope} without review (learned, {self.days} days)"[:200]

    def rule(self, *, order: int) -> PolicyRule:
        """The rule this proposal is, unsaved: in shadow mode, which only records what it would decide."""
        return PolicyRule(
            name=self.name,
            tool_name=self.tool,
            field=self.field,
            operator=self.operator,
            value=self.value,
            outcome=PolicyRule.Outcome.RUN,
            order=order,
            enabled=True,
            shadow=True,
        )


# --- the calls -----------------------------------------------------------------------------------


def window_calls(window: Window, tool: str = ""):
    """The tool calls proposed in the window, practice calls left out (approvals/planted.py)."""
    calls = ToolCall.objects.filter(kind=ToolCall.Kind.CALL, created_at__gte=window.since, created_at__lt=window.before)
    tool = tool or window.tool
    return planted.hide(calls.filter(tool_name=tool) if tool else calls)


def settled_verdict():
    """The verdict of the decision that settled a call's last review round (None: not settled)."""
    settled = Decision.objects.filter(tool_call=OuterRef("pk"), final=True, round=OuterRef("review_round"))
    return Subquery(settled.order_by("-id").values("verdict")[:1])


def settled_calls(window: Window) -> dict[str, list[Settled]]:
    """{tool: [its settled calls]}: the calls of the window a person (or the deadline) settled."""
    other = Decision.objects.filter(tool_call=OuterRef("pk")).exclude(verdict=Decision.Verdict.APPROVE)
    rows = (
        window_calls(window)
        .annotate(verdict=settled_verdict(), mixed=Exists(other))
        .filter(verdict__isnull=False)
        .values("pk", "tool_name", "arguments", "status", "verdict", "mixed", agent=F("run__agent"))
        .order_by("pk")
    )
    calls: dict[str, list[Settled]] = {}
    for row in rows:
        calls.setdefault(row["tool_name"], []).append(Settled(row["pk"], row["agent"], row["arguments"], _outcome(row)))
    return calls


def _outcome(row: dict) -> str:
    if row["verdict"] == Decision.Verdict.APPROVE:
        if row["mixed"]:
            return "mixed"
        return "undone" if row["status"] == ToolCall.Status.UNDONE else PLAIN
    return row["verdict"]


# --- the learner ---------------------------------------------------------------------------------


def _value(call: Settled, name: str) -> Decimal | None:
    if not isinstance(call.arguments, dict) or name not in call.arguments:
        return None  # a rule on `name` would hold this call: not evidence either way
    try:
        return rule_number(call.arguments[name])
    except RuleError:
        return None


def learn(tool: Tool, calls: list[Settled], *, min_calls: int, window: Window) -> Proposal | None:
    """The proposal for one tool's settled calls, if there is one (the rule in this module's docstring)."""
    name = amount_field(tool)
    days = len(window.days)
    if not name:
        if any(call.outcome != PLAIN for call in calls) or len(calls) < min_calls:
            return None
        return Proposal(tool.name, "", None, len(calls), _agents(calls), days=days, window=window)
    valued = [(value, call) for call in calls if (value := _value(call, name)) is not None]
    ceiling = min((value for value, call in valued if call.outcome != PLAIN), default=None)
    under = [(value, call) for value, call in valued if ceiling is None or value < ceiling]
    if len(under) < min_calls:
        return None
    top = max(under, key=lambda pair: pair[0])[1]
    assert top.arguments is not None  # a valued call's arguments hold `name` (_value)
    above = Counter(call.outcome for value, call in valued if ceiling is not None and value >= ceiling)
    return Proposal(
        tool.name,
        name,
        top.arguments[name],
        len(under),
        _agents([call for _, call in under]),
        tuple((what, above[what]) for what in LABELS if above[what]),
        money=name in tool.money_fields,
        days=days,
        window=window,
    )


def _agents(calls: list[Settled]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(Counter(call.agent for call in calls).items(), key=lambda item: (-item[1], item[0])))


def covering_rule(tool: str, field_name: str, value, rules: list[PolicyRule] | None = None) -> PolicyRule | None:
    """A rule already added that runs these calls without review (enabled or not, shadow or not); `rules`:
    the run-without-review rules already read (run_rules()), else they are read."""
    rules = run_rules([tool]).get(tool, []) if rules is None else rules
    for rule in rules:
        if rule.operator == PolicyRule.Operator.ANY:
            return rule
        if not field_name or rule.field != field_name:
            continue
        if rule.operator not in (PolicyRule.Operator.LE, PolicyRule.Operator.LT):
            continue
        try:
            limit, wanted = rule_number(rule.value), rule_number(value)
        except RuleError:
            continue
        if limit > wanted or (limit == wanted and rule.operator == PolicyRule.Operator.LE):
            return rule
    return None


def run_rules(tools) -> dict[str, list[PolicyRule]]:
    """Every run-without-review rule of these tools, enabled or not, in their order: one query."""
    found: dict[str, list[PolicyRule]] = {}
    for rule in PolicyRule.objects.filter(tool_name__in=list(tools), outcome=PolicyRule.Outcome.RUN):
        found.setdefault(rule.tool_name, []).append(rule)
    return found


def proposals(window: Window, *, min_calls: int | None = None) -> list[Proposal]:
    """The rules people could add, learned from the calls proposed in the window (one per tool at most).
    Three queries whatever the window holds: the settled calls, the declared tools, the rules."""
    min_calls = settings.LEARN_MIN_CALLS if min_calls is None else min_calls
    calls = settled_calls(window)
    if not calls:
        return []
    tools = {tool.name: tool for tool in registry.declared()}
    found = [
        proposal
        for name, settled in sorted(calls.items())
        if name in tools and (proposal := learn(tools[name], settled, min_calls=max(1, min_calls), window=window))
    ]
    rules = run_rules(p.tool for p in found)
    return [p for p in found if covering_rule(p.tool, p.field, p.value, rules.get(p.tool, [])) is None]


def proposal_for(window: Window, *, tool: str) -> Proposal | None:
    """The proposal for this tool in the window, if the decisions still make one."""
    narrowed = Window(window.first, window.last, tool)
    return next((p for p in proposals(narrowed) if p.tool == tool), None)
