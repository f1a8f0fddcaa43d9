"""The demo shop's tools refuse what cannot succeed before anyone is asked, and warn about a wrong address."""

import json
import re

import pytest
from django.urls import reverse

from approvals import services
from approvals.models import ToolCall
from approvals.services import EditInvalid, ProposedCall
from approvals.tools import registry
from tests.reviewing import model_reply

pytestmark = pytest.mark.django_db

ARABIC_INDIC_1001 = "A-\u0661\u0660\u0660\u0661"
EMAIL = {"to": "dana.smith@example.com", "subject": "Your order", "body": "It has shipped."}


def gate(run, name, arguments, call_id="call_1") -> ToolCall:
    services.step_record(run=run, content="I'll do it.", calls=[ProposedCall(call_id, name, json.dumps(arguments))])
    return ToolCall.objects.get(run=run, call_id=call_id)


def tool_output(run) -> str:
    return run.messages.filter(role="tool").values_list("content", flat=True).get()


@pytest.mark.parametrize("subject", ["Hi\r\nBcc: all@evil.example", "Hi\nthere", "Hi\rthere", "Hi\u2028there"])
def test_an_email_subject_with_a_line_break_is_refused_with_a_field_error(run, subject):
    call = gate(run, "send_email", {**EMAIL, "subject": subject})
    assert call.status == ToolCall.Status.INVALID
    assert "subject: " in tool_output(run) and "one line" in tool_output(run)
    assert not ToolCall.objects.filter(status=ToolCall.Status.PENDING).exists()


def test_an_edit_that_puts_a_line_break_in_the_subject_is_refused_on_that_field(run, reviewer):
    call = gate(run, "send_email", EMAIL)
    with pytest.raises(EditInvalid) as refused:
        services.toolcall_decide(
            call_id=call.pk,
            reviewer=reviewer,
            verdict="edit",
            shown_hash=call.review_hash,
            arguments={**EMAIL, "subject": "Hi\r\nBcc: all@evil.example"},
        )
    assert list(refused.value.errors) == ["subject"]
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING


@pytest.mark.parametrize(
    "name, arguments, field",
    [
        ("issue_refund", {"order_id": ARABIC_INDIC_1001, "amount": 5, "reason": "Broken"}, "order_id"),
        ("get_order_status", {"order_id": ARABIC_INDIC_1001}, "order_id"),
        ("add_order_note", {"order_id": "A-\u0967\u0966\u0966\u0967", "text": "Devanagari digits"}, "order_id"),
        ("send_email", {**EMAIL, "order_id": ARABIC_INDIC_1001}, "order_id"),
        ("send_email", {**EMAIL, "to": "d\u0430na.smith@example.com"}, "to"),  # a Cyrillic "а"
    ],
)
def test_digits_and_letters_of_other_scripts_do_not_pass_the_patterns(run, name, arguments, field):
    call = gate(run, name, arguments)
    assert call.status == ToolCall.Status.INVALID
    assert f"{field}: String should match pattern" in tool_output(run)


def test_every_pattern_of_every_tool_is_ascii_only():
    for tool in registry.all():
        text = json.dumps(tool.args_model.model_json_schema())
        patterns = re.findall(r'"pattern": "((?:[^"\\]|\\.)*)"', text)
        for pattern in patterns:
            assert not re.search(r"\\\\[dDwWsSb]", pattern), (tool.name, pattern)


def test_an_email_to_no_customers_address_warns_with_the_orders_real_address(run):
    call = gate(run, "send_email", {**EMAIL, "to": "dana.smith@gmail.co", "order_id": "A-1001"})
    assert call.status == ToolCall.Status.PENDING
    assert call.facts["warning"] == (
        "dana.smith@gmail.co is not the address of Dana Smith, the customer of order A-1001:"
        " theirs is dana.smith@example.com."
    )
    assert call.facts["order_customer_email"] == "dana.smith@example.com (Dana Smith)"
    assert "about order A-1001" in call.description


def test_an_email_to_another_customer_about_an_order_warns_too(run):
    call = gate(run, "send_email", {**EMAIL, "to": "lee.wong@example.com", "order_id": "A-1001"})
    assert call.facts["recipient"].startswith("Lee Wong")
    assert "theirs is dana.smith@example.com" in call.facts["warning"]


def test_an_email_to_the_orders_customer_has_no_warning(run):
    call = gate(run, "send_email", {**EMAIL, "order_id": "A-1001"})
    assert "warning" not in call.facts


def test_without_an_order_the_warning_names_the_closest_customers_address(run):
    call = gate(run, "send_email", {**EMAIL, "to": "dana.smith@gmail.co"})
    assert call.facts["warning"] == (
        "dana.smith@gmail.co is not the address of any customer. "
        "The closest customer is Dana Smith <dana.smith@example.com>."
    )
    assert call.facts["closest_customer"] == "Dana Smith <dana.smith@example.com>"


def test_an_email_about_an_order_that_does_not_exist_is_refused(run):
    call = gate(run, "send_email", {**EMAIL, "order_id": "A-9999"})
    assert call.status == ToolCall.Status.INVALID
    assert "there is no order A-9999" in tool_output(run)


def test_the_panel_shows_the_emails_warning_like_the_refunds_with_the_real_address(client, reviewer, run):
    gate(run, "send_email", {**EMAIL, "to": "dana.smith@gmail.co", "order_id": "A-1001"}, "call_1")
    gate(run, "issue_refund", {"order_id": "A-1001", "amount": 490, "reason": "Broken"}, "call_2")
    client.force_login(reviewer)
    page = "".join(client.get(reverse("approvals:call", args=[call.pk])).text for call in run.tool_calls.order_by("pk"))
    warnings = re.findall(r'<dt>([^<]*)</dt><dd class="warning">([^<]*)</dd>', page)
    assert [label for label, _ in warnings] == ["Warning", "Warning"]
    assert any("dana.smith@gmail.co" in text and "theirs is dana.smith@example.com" in text for _, text in warnings)
    assert re.search(r"<dt>Order customer email</dt><dd[^>]*>dana.smith@example.com \(Dana Smith\)</dd>", page)


def test_the_demo_agent_emails_dana_about_her_order_and_the_reviewer_is_warned(make_run):
    run = make_run("Email Dana that her replacement has shipped.")
    call = run.tool_calls.get(tool_name="send_email")
    assert call.arguments["order_id"] == "A-1001"
    assert call.facts["order_customer_email"] == "dana.smith@example.com (Dana Smith)"
    assert "warning" in call.facts


def test_an_order_status_is_read_in_one_statement_with_what_was_refunded(shop):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from approvals.tools import ToolContext
    from shop.models import Order, Refund
    from shop.tools import OrderArgs, get_order_status

    order = Order.objects.get(number="A-1002")
    Refund.objects.create(order=order, amount="5.00", reason="late", idempotency_key="test-refund-1")
    Refund.objects.create(order=order, amount="2.50", reason="dent", idempotency_key="test-refund-2")
    with CaptureQueriesContext(connection) as queries:
        status = json.loads(get_order_status(OrderArgs(order_id="A-1002"), ToolContext("k")))
    assert len(queries) == 1
    assert status["refunded"] == str(order.refunded_total()) == "7.50"
    assert status["customer"] == order.customer.name and status["status"] == order.status
    untouched = Order.objects.exclude(refunds__isnull=False).first()
    assert json.loads(get_order_status(OrderArgs(order_id=untouched.number), ToolContext("k")))["refunded"] == "0.00"


def test_an_order_status_for_no_such_order_tells_the_model(run):
    proposed = ProposedCall("call_1", "get_order_status", json.dumps({"order_id": "A-9999"}))
    model_reply(run, "Looking.", [proposed])
    call = ToolCall.objects.get(run=run, call_id="call_1")
    assert call.status == ToolCall.Status.FAILED
    assert "there is no order A-9999" in tool_output(run)
