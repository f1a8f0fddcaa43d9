"""Shadow rules: they decide nothing, record what they would have decided next to
the human decision, and the admin shows how often they agreed."""

import pytest
from django.urls import reverse

from approvals.models import PolicyRule, ShadowResult, ToolCall
from tests.reviewing import advance, pending_call, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def trial_rule(db):
    return PolicyRule.objects.create(
        name="Refunds up to $50 without review (trial)",
        tool_name="issue_refund",
        field="amount",
        operator="<=",
        value=50,
        outcome="run",
        shadow=True,
        order=1,
    )


def test_a_shadow_rule_decides_nothing(make_run, db):
    PolicyRule.objects.create(
        name="forbid all (trial)", tool_name="issue_refund", operator="any", outcome="forbid", shadow=True, order=1
    )
    call = pending_call(make_run)
    assert call.status == ToolCall.Status.PENDING
    assert call.policy["reason"] == "Approval required tier"


def test_a_shadow_rule_records_what_it_would_have_decided_next_to_the_human_decision(
    make_run, client, reviewer, trial_rule
):
    call = pending_call(make_run)
    result = ShadowResult.objects.get()
    assert (result.rule, result.tool_call, result.outcome, result.verdict, result.agreed) == (
        trial_rule,
        call,
        "run",
        "",
        None,
    )
    client.force_login(reviewer)
    post(client, call, "approve")
    result.refresh_from_db()
    assert (result.verdict, result.agreed) == ("approve", True)


def test_a_reject_or_an_edit_disagrees_with_a_shadow_rule_that_would_have_run_the_call(
    make_run, client, reviewer, trial_rule
):
    client.force_login(reviewer)
    rejected = pending_call(make_run)
    post(client, rejected, "reject", reason="No")
    edited = pending_call(make_run, "Order A-1003 arrived broken. Please refund $45.")
    post(client, edited, "edit", arg_order_id="A-1003", arg_amount="7.5", arg_reason="Shipping only")
    assert list(ShadowResult.objects.order_by("id").values_list("verdict", "agreed")) == [
        ("reject", False),
        ("edit", False),
    ]


def test_a_shadow_rule_whose_condition_does_not_hold_records_nothing(make_run, trial_rule):
    pending_call(make_run, "Order A-1004 arrived broken. Please refund $300.")
    assert not ShadowResult.objects.exists()


def test_a_shadow_rule_that_cannot_be_evaluated_is_skipped(make_run, db):
    PolicyRule.objects.create(
        name="broken (trial)",
        tool_name="issue_refund",
        field="amount",
        operator="<=",
        value="x",
        outcome="run",
        shadow=True,
    )
    call = pending_call(make_run)
    assert call.status == ToolCall.Status.PENDING
    assert "could not be evaluated" not in call.policy["reason"]
    assert not ShadowResult.objects.exists()


def test_the_admin_shows_how_often_a_shadow_rule_agreed(make_run, client, reviewer, admin_user, trial_rule):
    client.force_login(reviewer)
    for text, action in [
        ("Order A-1001 arrived broken. Please refund $40.", "approve"),
        ("Order A-1003 arrived broken. Please refund $45.", "approve"),
        ("Order A-1002 arrived broken. Please refund $35.", "reject"),
    ]:
        post(client, pending_call(make_run, text), action, reason="No")
    pending_call(make_run, "Order A-1005 arrived broken. Please refund $22.")  # not decided yet
    assert trial_rule.shadow_summary() == "agreed 2 of 3 decisions (67%); matched 4 call(s)"
    client.force_login(admin_user)
    listing = client.get(reverse("admin:approvals_policyrule_changelist")).content.decode()
    assert "agreed 2 of 3 decisions (67%); matched 4 call(s)" in listing
    page = client.get(reverse("admin:approvals_policyrule_change", args=[trial_rule.pk])).content.decode()
    assert "agreed 2 of 3 decisions (67%)" in page


def test_switching_a_shadow_rule_on_makes_it_decide(make_run, trial_rule):
    trial_rule.shadow = False
    trial_rule.save()
    run = make_run("Order A-1001 arrived broken. Please refund $40.")
    assert run.tool_calls.get(tool_name="issue_refund").status == ToolCall.Status.EXECUTED


def test_an_expired_call_is_not_counted_as_agreement(make_run, trial_rule):
    from approvals import services

    call = pending_call(make_run)
    services.toolcall_expire(call_id=call.pk)
    assert list(ShadowResult.objects.values_list("verdict", "agreed")) == [("expire", None)]
    advance(call)
