"""Edits: generated from the tool's schema, validated on the server field by field,
shown against the model's arguments, and explained to the model afterwards."""

import json

import pytest

from approvals.models import Decision, ToolCall
from shop.models import Refund
from tests.reviewing import advance, call_url, post

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _alice_logged_in(client, reviewer):
    client.force_login(reviewer)


def edit(client, call, **fields):
    data = {"arg_order_id": "A-1001", "arg_amount": "40", "arg_reason": "Item arrived damaged"}
    data.update({f"arg_{name}": value for name, value in fields.items()})
    return post(client, call, "edit", **{k: v for k, v in data.items() if v is not None})


def assert_nothing_decided(call):
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert not Decision.objects.filter(tool_call=call).exists()
    assert not Refund.objects.exists()


def test_the_edit_form_is_generated_from_the_tool_schema(client, call):
    html = client.get(call_url(call) + "?edit=1").content.decode()
    assert 'name="arg_order_id" value="A-1001"' in html
    assert 'type="number" name="arg_amount" value="40.0" step="0.01" min="0" max="100000" required' in html
    assert '<textarea name="arg_reason" rows="5">Item arrived damaged</textarea>' in html
    assert "Amount in dollars, at most two decimals." in html
    assert "the tool cannot be changed" in html


def test_an_edit_with_a_wrong_type_is_refused_with_a_field_error_and_nothing_runs(client, call):
    response = edit(client, call, amount="forty")
    assert response.status_code == 400
    assert '<small class="error">Enter a number.</small>' in response.content.decode()
    assert_nothing_decided(call)


def test_an_edit_in_json_with_a_wrong_type_is_refused_by_the_strict_schema(client, call):
    arguments = {"order_id": "A-1001", "amount": "40", "reason": "Item arrived damaged"}
    response = post(client, call, "edit", arguments_json=json.dumps(arguments))
    assert response.status_code == 400
    assert "Input should be a valid number" in response.content.decode()
    assert_nothing_decided(call)


def test_an_edit_with_a_negative_amount_is_refused_with_a_field_error(client, call):
    response = edit(client, call, amount="-5")
    assert response.status_code == 400
    assert '<small class="error">Input should be greater than 0</small>' in response.content.decode()
    assert_nothing_decided(call)


def test_an_edit_with_an_unknown_field_is_refused_with_a_field_error(client, call):
    response = edit(client, call, to_card="4111 1111 1111 1111")
    assert response.status_code == 400
    assert "to_card: Unknown field." in response.content.decode()
    assert_nothing_decided(call)


def test_an_unknown_field_in_json_is_refused_too(client, call):
    arguments = {"order_id": "A-1001", "amount": 40, "reason": "damaged", "to_card": "x"}
    response = post(client, call, "edit", arguments_json=json.dumps(arguments))
    assert response.status_code == 400
    assert "to_card: Unknown field." in response.content.decode()
    assert_nothing_decided(call)


def test_a_missing_required_field_is_refused(client, call):
    response = edit(client, call, reason="")
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert_nothing_decided(call)


def test_the_form_keeps_what_the_reviewer_typed_after_an_error(client, call):
    html = edit(client, call, amount="-5", reason="Only the lid was broken").content.decode()
    assert ">Only the lid was broken</textarea>" in html
    assert 'value="-5"' in html


def test_an_edit_cannot_change_the_tool(client, call, model):
    response = edit(client, call, amount="7.5", tool_name="delete_customer")
    assert response.status_code == 400
    assert "tool_name: Unknown field." in response.content.decode()
    response = post(client, call, "edit", arguments_json=json.dumps({"name": "delete_customer", "customer_id": 1}))
    assert response.status_code == 400
    response = post(
        client, call, "edit", tool_name="delete_customer", arg_order_id="A-1001", arg_amount="7.5", arg_reason="lid"
    )
    assert response.status_code == 302
    call = advance(call)
    assert call.tool_name == "issue_refund"
    assert call.status == ToolCall.Status.EXECUTED
    assert Refund.objects.get().amount == 7.5


def test_showing_changes_compares_the_edit_with_the_models_arguments_and_decides_nothing(client, call):
    response = post(
        client, call, "preview_edit", arg_order_id="A-1001", arg_amount="7.5", arg_reason="Item arrived damaged"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "What the reviewer changed" in html
    assert '<th scope="row">amount</th><td class="before">40.0</td><td class="after">7.5</td>' in html
    assert "reason</th>" not in html
    assert_nothing_decided(call)


def test_an_edited_call_shows_the_models_arguments_the_edit_and_the_difference(client, call, reviewer2):
    edit(client, call, amount="7.5")
    client.force_login(reviewer2)
    html = client.get(call_url(call)).content.decode()
    assert "Arguments <small>from the model</small>" in html
    assert "&quot;amount&quot;: 40.0" in html
    assert "Arguments after a reviewer&#x27;s edit" in html or "Arguments after a reviewer's edit" in html
    assert "&quot;amount&quot;: 7.5" in html
    assert '<td class="before">40.0</td><td class="after">7.5</td>' in html


def test_the_model_is_told_plainly_what_the_reviewer_changed(client, call, model):
    assert edit(client, call, amount="7.5", reason="Only the shipping").status_code == 302
    decision = Decision.objects.get(tool_call=call)
    assert decision.verdict == Decision.Verdict.EDIT
    assert decision.arguments == {"order_id": "A-1001", "amount": 7.5, "reason": "Only the shipping"}
    advance(call)
    tool_message = [m for m in model.requests()[-1]["messages"] if m["role"] == "tool"][-1]
    assert tool_message["content"].startswith(
        "A human reviewer edited this call before it ran: changed amount from 40 to 7.5; "
        "reason from 'Item arrived damaged' to 'Only the shipping'. "
        "The call ran with the reviewer's arguments; do not retry the original."
    )
    assert "Refunded $7.50 on order A-1001" in tool_message["content"]
    assert Refund.objects.get().amount == 7.5


def test_an_edit_that_changes_nothing_is_an_approval(client, call):
    edit(client, call)
    assert Decision.objects.get(tool_call=call).verdict == Decision.Verdict.APPROVE


def test_an_edited_call_is_described_and_its_facts_fetched_for_the_edited_arguments(client, call, reviewer2):
    from approvals.models import PolicyRule

    PolicyRule.objects.create(
        name="two", tool_name="issue_refund", operator="any", outcome="review", required_approvals=2, order=1
    )
    edit(client, call, order_id="A-1003", amount="12.5")
    call.refresh_from_db()
    assert call.current_description == "Refund $12.50 to Maria Garcia for order A-1003 (order total $62.50)"
    assert call.description.startswith("Refund $40.00 to Dana Smith")
    assert call.facts["customer"] == "Maria Garcia"
    client.force_login(reviewer2)
    html = client.get(call_url(call)).content.decode()
    assert "Refund $12.50 to Maria Garcia for order A-1003" in html
    assert "The model proposed: Refund $40.00 to Dana Smith for order A-1001" in html
