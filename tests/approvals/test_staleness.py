"""At execution the facts are fetched again: where a material fact changed since the
reviewers saw it, the call does not run and returns to the queue with the change shown."""

import pytest
from django.urls import reverse

from approvals.models import AuditEvent, Decision, ToolCall
from shop.models import Customer, Order, Refund
from tests.reviewing import advance, call_url, pending_call, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved_call(make_run, client, reviewer):
    call = pending_call(make_run)
    assert call.facts["already_refunded"] == "$0.00"
    client.force_login(reviewer)
    post(client, call, "approve")
    return call


def test_a_refund_whose_order_was_refunded_meanwhile_returns_to_the_queue(approved_call, model):
    Refund.objects.create(
        order=Order.objects.get(number="A-1001"), amount=5, reason="goodwill", idempotency_key="elsewhere"
    )
    asked = len(model.requests())
    call = advance(approved_call)
    assert call.status == ToolCall.Status.PENDING
    assert call.review_round == 2
    assert call.changed_facts == {"already_refunded": {"before": "$0.00", "after": "$5.00"}}
    assert call.facts["already_refunded"] == "$5.00"
    assert call.returned_reason == "The facts changed since the call was reviewed (already refunded: $0.00 → $5.00)."
    assert Refund.objects.count() == 1
    assert len(model.requests()) == asked
    event = AuditEvent.objects.get(tool_call=call, kind="returned")
    assert event.payload["changes"] == call.changed_facts


def test_the_returned_call_shows_the_change_highlighted(approved_call, client, reviewer2):
    Order.objects.filter(number="A-1001").update(status="cancelled")
    advance(approved_call)
    client.force_login(reviewer2)
    assert f'id="row-{approved_call.pk}"' in client.get(reverse("approvals:queue")).content.decode()
    html = client.get(reverse("approvals:call", args=[approved_call.pk])).content.decode()
    assert (
        "Back in the queue:</strong> The facts changed since the call was reviewed"
        " (order status: delivered → cancelled)." in html
    )
    assert '<dd class=" changed">cancelled <small>(was delivered)</small></dd>' in html


def test_a_changed_customer_address_holds_the_refund_too(approved_call):
    Customer.objects.filter(email="dana.smith@example.com").update(email="dana@elsewhere.example")
    call = advance(approved_call)
    assert call.status == ToolCall.Status.PENDING
    assert set(call.changed_facts) == {"customer_email"}


def test_the_returned_call_is_reviewed_again_even_by_the_same_reviewer_and_runs_once(approved_call, client):
    Refund.objects.create(
        order=Order.objects.get(number="A-1001"), amount=5, reason="goodwill", idempotency_key="elsewhere"
    )
    call = advance(approved_call)
    assert post(client, call, "approve").status_code == 302
    call = advance(call)
    assert call.status == ToolCall.Status.EXECUTED
    assert Refund.objects.count() == 2
    assert [(d.round, d.final) for d in Decision.objects.order_by("id")] == [(1, True), (2, True)]
    assert call.final_decision().round == 2


def test_a_change_the_tool_does_not_call_material_does_not_hold_the_call(approved_call):
    Order.objects.filter(number="A-1001").update(items="Ceramic teapot (1), lid (1)")
    assert advance(approved_call).status == ToolCall.Status.EXECUTED


def test_unchanged_facts_let_the_call_run(approved_call, client):
    assert advance(approved_call).status == ToolCall.Status.EXECUTED
    assert client.get(call_url(approved_call)).status_code == 200
