"""Rules learned from decisions (approvals/insight/learned.py): Insight proposes a rule for calls people always
approved as proposed; adding it makes a shadow rule, replayed over the past decisions, never enabled."""

import html
import threading

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connections
from django.urls import reverse

from approvals import insight, services
from approvals.insight import learned
from approvals.models import Decision, PolicyRule, Run, ShadowResult, ToolCall
from practice.models import PracticeCall
from tests.reviewing import pending_call

from .learning import refund, seed_history

pytestmark = pytest.mark.django_db

SENTENCE = (
    "You approved 25 of 25 issue_refund calls of at most $45.00 from the support agent in 30 days, 0 edits: "
    "run them without review?"
)


@pytest.fixture
def history(shop, reviewer):
    return seed_history(reviewer)


def window():
    return insight.Window.default()


def shadow_rules():
    """The rules in shadow mode (the agents app's migration adds one live rule: refunds of at most $20 run)."""
    return PolicyRule.objects.filter(shadow=True)


def add(client, *, htmx=True, **data):
    chosen = window()
    posted = {"since": chosen.first.isoformat(), "until": chosen.last.isoformat(), "tool": ""}
    posted |= {"tool_name": "issue_refund", "field": "amount", "value": "45.0"} | data
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(reverse("approvals:insight_rule_add"), posted, headers=headers)


def test_a_rule_is_proposed_for_the_calls_people_always_approved(history):
    (proposal,) = learned.proposals(window())
    assert (proposal.tool, proposal.field, proposal.value, proposal.approved) == ("issue_refund", "amount", 45.0, 25)
    assert proposal.agents == (("support", 25),)
    assert proposal.sentence == SENTENCE
    assert proposal.condition == "amount <= 45"
    assert proposal.others_text == "Above $45.00: 1 edited, 1 rejected or sent back, 1 approved as proposed."


def test_the_insight_page_shows_the_proposal_to_an_auditor_without_the_button(client, auditor, history):
    client.force_login(auditor)
    page = client.get(reverse("approvals:insight")).content.decode()
    assert "Rules you could add" in page and SENTENCE in page
    assert "issue_refund: amount &lt;= 45 → run without review" in page
    assert "A rule names a tool, not an agent" in page
    assert "Add as shadow rule" not in page
    assert "Only people who may add policy rules in the admin can add it." in page


def test_an_edit_under_the_threshold_lowers_it_or_leaves_nothing_to_propose(history, reviewer):
    refund(30.0, "edit", reviewer)
    assert learned.proposals(window()) == []  # 9 plain approvals under $30: fewer than 20
    (proposal,) = learned.proposals(window(), min_calls=5)
    assert (proposal.value, proposal.approved) == (29.0, 9)
    assert "of at most $29.00" in proposal.sentence


@pytest.mark.parametrize("verdict", ["reject", "expire"])
def test_a_rejection_or_an_expiry_under_the_threshold_lowers_it_too(history, reviewer, verdict):
    refund(23.0, verdict, reviewer)
    (proposal,) = learned.proposals(window(), min_calls=2)
    assert proposal.value == 22.0


def test_an_approval_after_an_edit_or_an_undone_refund_is_not_a_plain_approval(history, reviewer, reviewer2):
    mixed = refund(32.0, "edit", reviewer, status="pending")
    Decision.objects.filter(tool_call=mixed).update(final=False)
    Decision.objects.create(tool_call=mixed, reviewer=reviewer2, verdict="approve")
    refund(27.0, "approve", reviewer, status="undone")
    (proposal,) = learned.proposals(window(), min_calls=2)
    assert proposal.value == 26.0


def test_calls_of_another_agent_count_since_a_rule_cannot_name_an_agent(history, reviewer):
    refund(25.0, "approve", reviewer, agent="billing")
    (proposal,) = learned.proposals(window())
    assert proposal.agents == (("support", 25), ("billing", 1)) and proposal.approved == 26
    assert "from the support and billing agents" in proposal.sentence
    refund(40.0, "reject", reviewer, agent="billing")
    (proposal,) = learned.proposals(window(), min_calls=5)
    assert proposal.value == 39.0


def test_too_few_approvals_propose_nothing(shop, reviewer):
    for amount in range(21, 40):
        refund(float(amount), "approve", reviewer)
    assert learned.proposals(window()) == []
    assert len(learned.proposals(window(), min_calls=19)) == 1


def test_the_minimum_is_a_setting(history, settings):
    settings.LEARN_MIN_CALLS = 26
    assert learned.proposals(window()) == []


def test_practice_calls_are_not_history(history, reviewer):
    def practice(amount, verdict):
        source = ToolCall.objects.filter(tool_name="issue_refund").first()
        run = Run.objects.create(agent="support", request="Practice.")
        call = refund(amount, verdict, reviewer, run=run)
        fields = {"tool_name": "issue_refund", "mistake": "amount", "explanation": "Ten times the amount."}
        PracticeCall.objects.create(run=run, tool_call=call, source=source, **fields)

    practice(25.0, "reject")  # a reviewer caught a planted mistake: not a decision about real refunds
    assert learned.proposals(window())[0].value == 45.0
    for amount in range(46, 56):
        practice(float(amount), "approve")  # missed practice calls do not raise the threshold
    (proposal,) = learned.proposals(window())
    assert (proposal.value, proposal.approved) == (45.0, 25)


def test_a_tool_without_a_numeric_key_is_proposed_only_when_every_call_was_approved(shop, reviewer):
    for _ in range(20):
        refund(None, "approve", reviewer, tool="send_email")
    (proposal,) = learned.proposals(window())
    assert (proposal.tool, proposal.field, proposal.condition) == ("send_email", "", "always")
    assert proposal.sentence.startswith("You approved 20 of 20 send_email calls from the support agent in 30 days")
    refund(None, "reject", reviewer, tool="send_email")
    assert learned.proposals(window()) == []


def test_adding_it_makes_one_shadow_rule_replayed_over_the_past_decisions(client, admin_user, history):
    client.force_login(admin_user)
    response = add(client)
    assert response.status_code == 200
    rule = shadow_rules().get()
    assert (rule.tool_name, rule.field, rule.operator, rule.value, rule.outcome) == (
        "issue_refund",
        "amount",
        "<=",
        45.0,
        "run",
    )
    assert rule.shadow and rule.enabled  # enabled as a shadow rule: it records, it decides nothing
    # the 25 approvals agree; the waiting $30 refund matched and is not decided yet; $60, $80, $100 do not match
    assert rule.shadow_counts() == {"matched": 26, "compared": 25, "agreed": 25}
    assert ShadowResult.objects.get(tool_call=history).verdict == ""
    body = response.content.decode()
    assert "it would have agreed with 25 of 25 past decisions (100%)" in body
    assert reverse("admin:approvals_policyrule_change", args=[rule.pk]) in body
    assert "Add as shadow rule" not in body
    assert LogEntry.objects.get().change_message.startswith("Added in shadow mode from Insight: You approved 25")
    # the rule is not proposed again, and its record is on the insight page and in the admin
    assert learned.proposals(window()) == []
    page = client.get(reverse("approvals:insight")).content.decode()
    assert SENTENCE not in page and rule.name in page
    assert rule.shadow_summary() == "agreed 25 of 25 decisions (100%); matched 26 call(s)"


def test_a_new_call_after_adding_it_still_waits_for_review(make_run, client, admin_user, history):
    client.force_login(admin_user)
    assert add(client).status_code == 200
    call = pending_call(make_run)  # a refund of $40
    assert call.status == ToolCall.Status.PENDING and call.policy["reason"] == "Approval required tier"
    rule = shadow_rules().get()
    assert ShadowResult.objects.filter(rule=rule, tool_call=call, outcome="run", verdict="").exists()


def test_without_javascript_it_goes_to_the_rule_in_the_admin_with_the_replay(client, admin_user, history):
    client.force_login(admin_user)
    response = add(client, htmx=False)
    rule = shadow_rules().get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:approvals_policyrule_change", args=[rule.pk])
    page = client.get(response["Location"]).content.decode()
    assert "it would have agreed with 25 of 25 past decisions (100%)" in page
    assert "agreed 25 of 25 decisions (100%)" in page  # the admin's shadow record


def test_a_second_add_adds_no_second_rule(client, admin_user, history):
    client.force_login(admin_user)
    assert add(client).status_code == 200
    again = add(client)
    assert again.status_code == 409
    assert "Already added as the rule" in again.content.decode()
    assert shadow_rules().count() == 1
    assert ShadowResult.objects.count() == 26
    assert add(client, htmx=False).status_code == 409
    for value in ("NaN", "Infinity", "abc"):  # after it was added, a tampered threshold is still refused
        assert add(client, value=value).status_code == 400
    assert add(client, value="30").status_code == 409  # the rule added covers refunds of at most $30 too
    assert PolicyRule.objects.count() == 2  # the live $20 rule, and the one added


def test_an_auditor_sees_the_proposal_and_may_not_add_it(client, auditor, history):
    client.force_login(auditor)
    assert add(client).status_code == 403
    assert add(client, htmx=False).status_code == 403
    assert not shadow_rules().exists() and not ShadowResult.objects.exists()


def test_a_reviewer_may_not_add_it(client, reviewer, history):
    client.force_login(reviewer)
    assert add(client).status_code == 403
    assert not shadow_rules().exists()


@pytest.mark.parametrize(
    "data, said",
    [
        ({"value": "50"}, "The decisions propose “amount <= 45” for issue_refund, not “amount <= 50”"),
        ({"value": "1e999"}, "not “amount <= 1e999”"),
        ({"value": "abc"}, "not “amount <= abc”"),
        ({"value": "NaN"}, "not “amount <= NaN”"),
        ({"field": "order_id"}, "not “order_id <= 45.0”"),
        ({"field": ""}, "not “always”"),
        ({"tool_name": "delete_customer"}, "No rule is proposed for “delete_customer”"),
        ({"tool_name": "no_such_tool"}, "No rule is proposed for “no_such_tool”"),
        ({"since": "2026-13-01"}, "The days chosen are not valid"),
    ],
)
def test_a_proposal_the_decisions_do_not_make_adds_nothing(client, admin_user, history, data, said):
    client.force_login(admin_user)
    for htmx in (True, False):
        response = add(client, htmx=htmx, **data)
        assert response.status_code == 400
        assert said in html.unescape(response.content.decode())
    assert PolicyRule.objects.count() == 1 and not ShadowResult.objects.exists()
    assert not LogEntry.objects.exists()


def test_a_rule_added_by_hand_that_covers_the_proposal_stops_it(history):
    PolicyRule.objects.create(
        name="Refunds (trial)", tool_name="issue_refund", field="amount", operator="<", value=46, outcome="run"
    )
    assert learned.proposals(window()) == []
    PolicyRule.objects.filter(name="Refunds (trial)").update(value=45)
    assert [p.value for p in learned.proposals(window())] == [45.0]  # < 45 does not cover 45: a wider rule
    PolicyRule.objects.create(name="All refunds", tool_name="issue_refund", outcome="run", enabled=False)
    assert learned.proposals(window()) == []  # a rule added and disabled is not proposed again


def test_the_learned_rule_comes_after_the_tools_other_rules(client, admin_user, history):
    PolicyRule.objects.create(
        name="Big refunds", tool_name="issue_refund", field="amount", operator=">", value=500, outcome="review"
    )
    client.force_login(admin_user)
    assert add(client).status_code == 200
    assert list(PolicyRule.objects.values_list("name", "order")) == [
        ("Small refunds run without review", 10),
        ("Big refunds", 100),
        ("issue_refund of at most $45.00 without review (learned, 30 days)", 110),
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_two_people_adding_it_at_once_make_one_rule(require_postgres, history, admin_user, django_user_model):
    other = django_user_model.objects.create_superuser("root2")
    barrier = threading.Barrier(2, timeout=30)
    outcomes = []

    def accept(user):
        try:
            barrier.wait()
            services.learned_rule_add(user=user, window=window(), tool="issue_refund", field="amount", value="45")
            outcomes.append("added")
        except services.DecisionError as exc:
            outcomes.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=accept, args=(user,)) for user in (admin_user, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["RuleAlreadyAdded", "added"]
    assert shadow_rules().count() == 1 and ShadowResult.objects.count() == 26


def test_a_remote_agents_declared_tool_is_learned_from_too_and_the_page_shows_it(client, auditor, reviewer):
    """A declared tool's schema is not a pydantic model; the insight page read its amount field all the same
    (it answered 500 when such a tool had calls to learn from)."""
    from tests.agentapi import AgentClient

    agent = AgentClient("learning-bot")
    agent.declare()
    for n in range(3):
        call = ToolCall.objects.get(pk=agent.propose(idempotency_key=f"learn-{n}")["id"])
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)

    (proposal,) = learned.proposals(window(), min_calls=2)
    assert (proposal.tool, proposal.field, proposal.value) == ("learning-bot.issue_refund", "amount", 490.0)
    client.force_login(auditor)
    assert client.get(reverse("approvals:insight")).status_code == 200
