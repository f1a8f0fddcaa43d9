"""Which model turns pause for a person: turn rules (models.TurnRule) matched against one turn.

A rule matches a turn when every condition it sets holds — the agent, the step range (from/until,
1 = the first model turn), any one of its words in the transcript (case-insensitive) — and a rule
that sets none of these matches only with "every turn". The first enabled rule that matches and is
not in shadow mode pauses the turn; every matching shadow rule records that it would have.
"""

from dataclasses import dataclass, field
from functools import cached_property

from approvals.models import Message, TurnRule
from approvals.policy import snapshot as policy_snapshot

TURN_TOOL = "model turn"  # the tool name a held turn carries in the record (the queue's filters, the trail)


@dataclass
class Turn:
    """A model turn about to be taken: whose, which (1 = the first), and the transcript the model would see.
    Its text is read from the transcript only if a rule asks for words."""

    agent: str
    step: int
    transcript: list[Message] = field(default_factory=list)

    @cached_property
    def text(self) -> str:
        return transcript_text(self.transcript)


def transcript_text(transcript: list[Message]) -> str:
    """Everything the model would read, case-folded: the rows' text and the arguments of the calls it made."""
    parts = []
    for message in transcript:
        parts.append(message.content or "")
        parts.extend(str((call.get("function") or {}).get("arguments", "")) for call in message.tool_calls or [])
    return "\n".join(parts).casefold()


def rows_of(transcript: list[dict]) -> list[Message]:
    """An agent's own transcript (OpenAI messages, as it sent them) as rows to match and to show; not stored."""
    return [
        Message(
            seq=i,
            role=str(m.get("role", "")),
            content=str(m.get("content") or ""),
            tool_calls=m.get("tool_calls") or [],
        )
        for i, m in enumerate(transcript)
    ]


def rule_words(rule: TurnRule) -> list[str]:
    """The rule's words, one per line, case-folded; blank lines ignored."""
    return [line.strip().casefold() for line in (rule.words or "").splitlines() if line.strip()]


def sets_a_condition(rule: TurnRule) -> bool:
    return bool(rule.agent or rule.from_step or rule.until_step or rule_words(rule))


def rule_matches(rule: TurnRule, turn: Turn) -> bool:
    if not sets_a_condition(rule):
        return rule.every_turn
    if rule.agent and rule.agent != turn.agent:
        return False
    if rule.from_step and turn.step < rule.from_step:
        return False
    if rule.until_step and turn.step > rule.until_step:
        return False
    words = rule_words(rule)
    return not words or any(word in turn.text for word in words)


def match(rules: list[TurnRule], turn: Turn) -> tuple[TurnRule | None, list[TurnRule]]:
    """The rule that pauses this turn (None: none does), and the shadow rules that would have."""
    pausing, shadows = None, []
    for rule in rules:
        if not rule.enabled or not rule_matches(rule, turn):
            continue
        if rule.shadow:
            shadows.append(rule)
        elif pausing is None:
            pausing = rule
    return pausing, shadows


def enabled_rules(*, fresh: bool = True) -> list[TurnRule]:
    """The enabled turn rules in their order, from this process's snapshot of policy (policy_snapshot.py);
    not `fresh`: as this thread last read it (a turn claimed by the step before it, whose gate just read it)."""
    return list((policy_snapshot.current() if fresh else policy_snapshot.read_last()).turn_rules)
