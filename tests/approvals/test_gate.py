"""The gate: every proposed call is refused, run, or held for review, in code."""

import json

import pytest

from approvals import policy
from approvals.models import AuditEvent, PolicyRule, ToolCall
from approvals.tools import registry
from tests.reviewing import propose

pytestmark = pytest.mark.django_db


def tool_output(run):
    return run.messages.filter(role="tool").values_list("content", flat=True).get()


def test_an_unknown_tool_is_answered_with_an_error_and_never_reaches_a_person(run):
    call = propose(run, "refund_everything", {"order_id": "A-1001"})
    assert call.status == ToolCall.Status.INVALID
    assert "there is no tool named 'refund_everything'" in tool_output(run)
    assert not ToolCall.objects.filter(status=ToolCall.Status.PENDING).exists()
    assert AuditEvent.objects.filter(tool_call=call, kind="invalid").exists()


def test_arguments_that_are_not_json_are_refused(run):
    call = propose(run, "issue_refund", '{"order_id": "A-1001", amount: 5')
    assert call.status == ToolCall.Status.INVALID
    assert "not valid JSON" in tool_output(run)


def test_arguments_of_the_wrong_type_are_refused_by_field(run):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": "lots", "reason": "broken"})
    assert call.status == ToolCall.Status.INVALID
    assert "amount:" in tool_output(run)


def test_a_negative_amount_is_refused(run):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": -5, "reason": "broken"})
    assert call.status == ToolCall.Status.INVALID
    assert "amount: Input should be greater than 0" in tool_output(run)


def test_an_unknown_argument_is_refused(run):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 5, "reason": "broken", "to_card": "x"})
    assert call.status == ToolCall.Status.INVALID
    assert "to_card: Unknown field." in tool_output(run)


def test_a_missing_argument_is_refused(run):
    propose(run, "issue_refund", {"order_id": "A-1001", "amount": 5})
    assert "reason: This field is required." in tool_output(run)


def test_a_failed_draft_check_is_refused_without_a_person(run):
    call = propose(run, "issue_refund", {"order_id": "A-9999", "amount": 50, "reason": "broken"})
    assert call.status == ToolCall.Status.INVALID
    assert "there is no order A-9999" in tool_output(run)


def test_a_forbidden_tool_is_never_offered_and_never_runs(run):
    assert "delete_customer" not in json.dumps(registry.openai_specs())
    call = propose(run, "delete_customer", {"customer_id": 1})
    assert call.status == ToolCall.Status.FORBIDDEN
    assert "not allowed" in tool_output(run)
    from shop.models import Customer

    assert Customer.objects.filter(pk=1).exists() or Customer.objects.count() == 4


def test_a_read_only_tool_is_approved_by_policy_to_run_at_once(run):
    call = propose(run, "get_order_status", {"order_id": "A-1001"})
    assert call.status == ToolCall.Status.APPROVED
    assert call.policy["action"] == "run"


def test_a_refund_of_at_most_20_dollars_runs_without_review(run):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 20, "reason": "shipping"})
    assert call.status == ToolCall.Status.APPROVED
    assert "Small refunds" in call.policy["reason"]


def test_a_larger_refund_waits_with_description_facts_and_expiry(run):
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 490, "reason": "broken"})
    assert call.status == ToolCall.Status.PENDING
    assert call.description == "Refund $490.00 to Dana Smith for order A-1001 (order total $49.00)"
    assert call.facts["order_total"] == "$49.00"
    assert call.facts["already_refunded"] == "$0.00"
    assert call.facts["customer_since"] == "2021-03-14"
    assert "refunds_to_customer_last_30_days" in call.facts
    assert call.reasoning == "I'll do it."
    assert call.user_request == "Help the customer."
    assert call.expires_at is not None
    assert call.arguments_hash
    assert not run.messages.filter(role="tool").exists()


def test_a_rule_that_cannot_be_evaluated_holds_the_call(run):
    PolicyRule.objects.create(
        name="broken", tool_name="issue_refund", field="amount", operator="<=", value="twenty", outcome="run", order=1
    )
    call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 5, "reason": "shipping"})
    assert call.status == ToolCall.Status.PENDING
    assert "could not be evaluated" in call.policy["reason"]


def test_policy_that_raises_holds_the_call_for_review(run, monkeypatch):
    def explode(tool, arguments):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(policy, "_evaluate", explode)
    call = propose(run, "get_order_status", {"order_id": "A-1001"})
    assert call.status == ToolCall.Status.PENDING


def test_a_rule_can_forbid_a_tool(run):
    PolicyRule.objects.create(name="no emails", tool_name="send_email", operator="any", outcome="forbid", order=1)
    call = propose(run, "send_email", {"to": "dana.smith@example.com", "subject": "Hi", "body": "Hello"})
    assert call.status == ToolCall.Status.FORBIDDEN


def test_a_rule_cannot_let_a_forbidden_tool_run(run):
    PolicyRule.objects.create(name="oops", tool_name="delete_customer", operator="any", outcome="run", order=1)
    call = propose(run, "delete_customer", {"customer_id": 1})
    assert call.status == ToolCall.Status.FORBIDDEN


def test_the_email_facts_say_when_the_recipient_is_not_a_customer(run):
    call = propose(run, "send_email", {"to": "dana.smith@gmail.co", "subject": "Hi", "body": "Hello"})
    assert call.facts["recipient"] == "NOT the address of any customer"
    assert call.facts["closest_customer"] == "Dana Smith <dana.smith@example.com>"
