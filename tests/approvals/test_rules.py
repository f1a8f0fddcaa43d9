"""Rules as data: stored, edited in the admin, evaluated in order, failing closed;
and applied again when a waiting call is about to run."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from approvals import policy, services
from approvals.models import AuditEvent, PolicyRule, ToolCall
from approvals.tools import registry
from shop.models import Refund
from tests.reviewing import advance, pending_call, post, senior_rule

pytestmark = pytest.mark.django_db

refund = registry.get("issue_refund")


def rule(**fields) -> PolicyRule:
    fields.setdefault("name", "a rule")
    fields.setdefault("tool_name", "issue_refund")
    return PolicyRule.objects.create(**fields)


def args(amount) -> dict:
    return {"order_id": "A-1001", "amount": amount, "reason": "damaged"}


def test_the_stored_rule_lets_a_refund_of_at_most_20_run(shop):
    assert policy.evaluate(refund, args(20)).action == policy.RUN
    assert policy.evaluate(refund, args(20.01)).action == policy.REVIEW


def test_rules_are_evaluated_in_order_and_the_first_that_holds_decides(shop):
    rule(name="never above 1000", field="amount", operator=">", value=1000, outcome="forbid", order=1)
    rule(name="two above 100", field="amount", operator=">", value=100, outcome="review", required_approvals=2, order=2)
    assert policy.evaluate(refund, args(5000)).action == policy.FORBID
    outcome = policy.evaluate(refund, args(200))
    assert (outcome.action, outcome.required_approvals) == (policy.REVIEW, 2)
    assert policy.evaluate(refund, args(15)).action == policy.RUN


def test_a_disabled_rule_does_not_decide(shop):
    rule(field="amount", operator=">", value=0, outcome="forbid", order=1, enabled=False)
    assert policy.evaluate(refund, args(50)).action == policy.REVIEW


def test_a_rule_on_another_value_compares_equality(shop):
    rule(field="order_id", operator="==", value="A-1004", outcome="forbid", order=1)
    assert policy.evaluate(refund, {**args(50), "order_id": "A-1004"}).action == policy.FORBID
    assert policy.evaluate(refund, args(50)).action == policy.REVIEW


def test_a_rule_that_cannot_be_evaluated_holds_the_call_for_its_group(shop, roles):
    rule(
        name="broken",
        field="amount",
        operator="<=",
        value="twenty",
        outcome="review",
        group=Group.objects.get(name="senior"),
        order=1,
    )
    outcome = policy.evaluate(refund, args(5))
    assert outcome.action == policy.REVIEW
    assert "could not be evaluated" in outcome.reason
    assert outcome.group_name == "senior"


def test_a_rule_on_an_argument_the_call_lacks_holds_the_call(shop):
    rule(name="typo", field="amout", operator="<=", value=1000, outcome="run", order=1)
    assert policy.evaluate(refund, args(5)).action == policy.REVIEW


def test_a_policy_change_that_forbids_a_waiting_call_stops_it_and_returns_it_to_the_queue(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "approve")
    rule(name="no refunds this week", operator="any", outcome="forbid", order=1)
    call = advance(call)
    assert call.status == ToolCall.Status.PENDING
    assert call.review_round == 2
    assert "Policy now forbids this call (rule “no refunds this week”)" in call.returned_reason
    assert not Refund.objects.exists()
    assert AuditEvent.objects.filter(tool_call=call, kind="returned").exists()
    response = post(client, call, "approve")
    assert response.status_code == 403
    assert "it can only be rejected" in response.content.decode()
    assert post(client, call, "reject", reason="Refunds are paused").status_code == 302
    assert advance(call).status == ToolCall.Status.REJECTED


def test_a_policy_change_that_needs_more_approvals_returns_the_call_keeping_its_approvals(
    make_run, client, reviewer, reviewer2
):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "approve")
    rule(
        name="two for refunds", field="amount", operator=">", value=30, outcome="review", required_approvals=2, order=1
    )
    call = advance(call)
    assert call.status == ToolCall.Status.PENDING
    assert call.review_round == 1
    assert call.required_approvals == 2
    assert "needs 2 approval(s) and has 1" in call.returned_reason
    assert not Refund.objects.exists()
    client.force_login(reviewer2)
    assert post(client, call, "approve").status_code == 302
    assert advance(call).status == ToolCall.Status.EXECUTED
    assert Refund.objects.count() == 1


def test_a_policy_change_that_names_a_group_returns_the_call_to_that_group(make_run, client, reviewer, senior):
    call = pending_call(make_run, "Order A-1004 arrived broken. Please refund $600.")
    client.force_login(reviewer)
    post(client, call, "approve")
    senior_rule(order=1)
    call = advance(call)
    assert call.status == ToolCall.Status.PENDING
    assert call.review_group.name == "senior"
    assert not Refund.objects.exists()
    client.force_login(senior)
    post(client, call, "approve")
    assert advance(call).status == ToolCall.Status.EXECUTED


def test_a_call_that_policy_let_run_is_held_if_policy_changed_before_it_ran(make_run, monkeypatch):
    original = services.toolcall_execute

    def tighten_then_execute(*, call):
        rule(name="review everything", operator="any", outcome="review", order=1)
        return original(call=call)

    monkeypatch.setattr(services, "toolcall_execute", tighten_then_execute)
    run = make_run("Order A-1001 arrived broken. Please refund $15.")
    call = run.tool_calls.get()
    assert AuditEvent.objects.filter(tool_call=call, kind="auto_run").exists()
    assert call.policy["reason"] == "rule “review everything”"
    assert call.status == ToolCall.Status.PENDING
    assert not Refund.objects.exists()


def test_rules_are_edited_in_the_admin(client, admin_user, shop, roles):
    client.force_login(admin_user)
    page = client.get(reverse("admin:approvals_policyrule_add")).content.decode()
    assert '<option value="issue_refund">issue_refund</option>' in page
    response = client.post(
        reverse("admin:approvals_policyrule_add"),
        {
            "name": "Refunds over $300: two seniors",
            "tool_name": "issue_refund",
            "field": "amount",
            "operator": ">",
            "value": "300",
            "outcome": "review",
            "required_approvals": "2",
            "group": Group.objects.get(name="senior").pk,
            "order": "3",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    outcome = policy.evaluate(refund, args(400))
    assert (outcome.action, outcome.required_approvals, outcome.group_name) == (policy.REVIEW, 2, "senior")


def test_the_admin_refuses_a_rule_on_an_argument_the_tool_does_not_have(client, admin_user, shop):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:approvals_policyrule_add"),
        {
            "name": "typo",
            "tool_name": "issue_refund",
            "field": "amout",
            "operator": "<=",
            "value": "5",
            "outcome": "run",
            "required_approvals": "1",
            "order": "1",
        },
    )
    assert response.status_code == 200
    assert "issue_refund has no argument &#x27;amout&#x27;" in response.content.decode()
    assert not PolicyRule.objects.filter(name="typo").exists()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('"A-1001\\u0000"', "Null characters are not allowed"),
        ("NaN", "finite number"),
        ("[" * 40 + "]" * 40, "Nested too deeply"),
    ],
)
def test_the_admin_refuses_a_rule_value_the_database_cannot_store_naming_the_field(
    client, admin_user, shop, value, problem
):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:approvals_policyrule_add"),
        {
            "name": "unstorable",
            "tool_name": "issue_refund",
            "field": "order_id",
            "operator": "==",
            "value": value,
            "outcome": "run",
            "required_approvals": "1",
            "order": "1",
        },
    )
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not PolicyRule.objects.filter(name="unstorable").exists()


def test_tool_settings_are_edited_in_the_admin(client, admin_user, roles):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:approvals_toolsetting_add"),
        {
            "tool_name": "send_email",
            "timeout_minutes": "30",
            "warn_minutes": "5",
            "on_expiry": "escalate",
            "escalate_to": "",
        },
    )
    assert response.status_code == 200
    assert "Name the group that overdue calls go to." in response.content.decode()


def test_a_tool_setting_saved_in_the_admin_applies_to_new_calls(client, admin_user, make_run):
    from approvals.models import ToolSetting

    client.force_login(admin_user)
    senior = Group.objects.get(name="senior")
    response = client.post(
        reverse("admin:approvals_toolsetting_add"),
        {
            "tool_name": "issue_refund",
            "group": senior.pk,
            "timeout_minutes": "30",
            "warn_minutes": "5",
            "on_expiry": "escalate",
            "escalate_to": senior.pk,
        },
    )
    assert response.status_code == 302
    assert ToolSetting.objects.get().escalates
    call = pending_call(make_run)
    assert call.review_group == senior
    assert (call.expires_at - call.created_at).total_seconds() == pytest.approx(1800, abs=5)
