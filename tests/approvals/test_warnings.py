"""What the reviewer sees is what runs: a call whose facts warn needs "Approve anyway",
and with the edit form open only the form's own button approves."""

import pytest

from approvals.models import AuditEvent, Decision, ToolCall
from tests.reviewing import pending_call, post

pytestmark = pytest.mark.django_db

REFUND_490 = "Order A-1001 arrived broken. Please refund $490."


def test_a_call_whose_facts_warn_is_not_approved_with_a_plain_click(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    assert "more than the $49.00 still refundable" in call.warning
    client.force_login(reviewer)
    response = post(client, call, "approve", htmx=True)
    assert response.status_code == 400
    assert "The facts warn: The refund is more than the $49.00 still refundable" in response.content.decode()
    assert not Decision.objects.exists()
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.PENDING


def test_approve_anyway_approves_it_and_the_trail_says_what_was_acknowledged(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    client.force_login(reviewer)
    assert post(client, call, "approve", htmx=True, approve_anyway="1").status_code == 200
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED
    decided = AuditEvent.objects.get(tool_call=call, kind="decided")
    assert "more than the $49.00 still refundable" in decided.payload["warning_acknowledged"]


def test_the_panel_offers_approve_anyway_and_no_plain_approve_for_a_warned_call(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    client.force_login(reviewer)
    html = client.get(f"/calls/{call.pk}/").content.decode()
    assert ">Approve anyway</button>" in html and 'data-key="a">Approve</button>' not in html
    batch = client.get("/queue/group/", {"tool": "issue_refund", "agent": "support", "band": "50-500"}).text
    assert f'value="{call.pk}:{call.arguments_hash}">' in batch  # in a batch, not checked for approval


def test_an_edit_that_clears_the_warning_is_approved_without_anyway(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    client.force_login(reviewer)
    response = post(client, call, "edit", htmx=True, arg_order_id="A-1001", arg_amount="49", arg_reason="broken")
    assert response.status_code == 200
    assert ToolCall.objects.get(pk=call.pk).approved_arguments["amount"] == 49


def test_an_edit_that_still_warns_asks_for_approve_anyway_on_the_form(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    client.force_login(reviewer)
    data = {"arg_order_id": "A-1001", "arg_amount": "60", "arg_reason": "broken"}
    response = post(client, call, "edit", htmx=True, **data)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'name="approve_anyway"' in html and "more than the $49.00 still refundable" in html
    assert not Decision.objects.exists()
    assert post(client, call, "edit", htmx=True, approve_anyway="on", **data).status_code == 200
    assert Decision.objects.get().arguments["amount"] == 60


def test_with_the_edit_form_open_the_only_approve_button_approves_the_form(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    html = client.get(f"/calls/{call.pk}/?edit=1").content.decode()
    assert f'action="/calls/{call.pk}/approve/"' not in html
    assert 'data-key="a">Approve with these arguments</button>' in html


def test_batch_approval_refuses_a_warned_call_and_says_why(make_run, client, reviewer):
    call = pending_call(make_run, REFUND_490)
    client.force_login(reviewer)
    response = client.post("/approve-selected/", {"calls": [f"{call.pk}:{call.review_hash}"]}, follow=True)
    assert f"#{call.pk} was not approved: The facts warn" in response.content.decode()
    assert not Decision.objects.exists()
