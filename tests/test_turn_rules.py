"""Which model turns a turn rule holds for a person (approvals/policy/turn_rules.py), without a database."""

from approvals.models import Message, TurnRule
from approvals.policy.turn_rules import Turn, match, rule_matches, transcript_text


def turn(step=1, text="Please refund $490 on order A-1001.", agent="support") -> Turn:
    return Turn(agent, step, [Message(role="user", content=text)])


def test_a_rule_with_words_matches_a_transcript_with_any_of_them_whatever_the_case():
    rule = TurnRule(name="refunds", words="chargeback\nREFUND\n")
    assert rule_matches(rule, turn())
    assert not rule_matches(rule, turn(text="Where is my parcel?"))


def test_a_rule_matches_only_its_agent():
    rule = TurnRule(name="probation", agent="orders")
    assert rule_matches(rule, turn(agent="orders"))
    assert not rule_matches(rule, turn(agent="support"))


def test_a_rule_matches_only_its_step_range():
    rule = TurnRule(name="first two", from_step=2, until_step=3)
    assert [rule_matches(rule, turn(step=n)) for n in (1, 2, 3, 4)] == [False, True, True, False]


def test_every_condition_a_rule_sets_must_hold():
    rule = TurnRule(name="refunds by support after the first turn", agent="support", from_step=2, words="refund")
    assert rule_matches(rule, turn(step=2))
    assert not rule_matches(rule, turn(step=1))
    assert not rule_matches(rule, turn(step=2, agent="orders"))
    assert not rule_matches(rule, turn(step=2, text="hello"))


def test_a_rule_without_conditions_matches_only_with_every_turn():
    assert not rule_matches(TurnRule(name="nothing"), turn())
    assert rule_matches(TurnRule(name="all", every_turn=True), turn(step=7, text="anything"))


def test_the_first_pausing_rule_wins_and_every_matching_shadow_rule_is_reported():
    shadow = TurnRule(name="shadow", words="refund", shadow=True)
    disabled = TurnRule(name="off", every_turn=True, enabled=False)
    first = TurnRule(name="first", words="refund")
    second = TurnRule(name="second", every_turn=True)
    other_shadow = TurnRule(name="shadow 2", every_turn=True, shadow=True)
    pausing, shadows = match([shadow, disabled, first, second, other_shadow], turn())
    assert pausing is first
    assert shadows == [shadow, other_shadow]


def test_the_transcript_is_not_read_when_no_rule_asks_for_words():
    probe = turn()
    match([TurnRule(name="all", every_turn=True), TurnRule(name="probation", agent="support")], probe)
    assert "text" not in probe.__dict__


def test_only_shadow_rules_matching_pause_nothing():
    pausing, shadows = match([TurnRule(name="s", every_turn=True, shadow=True)], turn())
    assert pausing is None and len(shadows) == 1


def test_the_transcript_text_holds_every_row_and_the_arguments_of_the_calls_the_model_made():
    rows = [
        Message(role="user", content="Help Dana."),
        Message(role="assistant", content="", tool_calls=[{"function": {"arguments": '{"amount": 1500}'}}]),
        Message(role="tool", content="Refunded $1500."),
    ]
    text = transcript_text(rows)
    assert "help dana." in text and '"amount": 1500' in text and "refunded $1500." in text
