"""Dry runs: approval-tier and reversible tools run their simulate() and write nothing;
reviewers can open the same preview on any pending call."""

import pytest
from django.core import mail
from django.urls import reverse

from approvals.models import Run, ToolCall
from shop.models import OrderNote, OutgoingEmail, Refund
from tests.reviewing import advance, approve_reply, call_url, pending_call, post

pytestmark = pytest.mark.django_db


def test_a_dry_run_writes_no_refund_and_no_email(make_run, client, reviewer):
    client.force_login(reviewer)
    refund = pending_call(make_run, "Order A-1001 arrived broken. Please refund $40.", dry_run=True)
    email = pending_call(make_run, "Email Dana that her replacement has shipped.", dry_run=True)
    for call in (refund, email):
        post(client, call, "approve", approve_anyway="1")  # the email to a wrong address warns
        call = advance(call)
        assert call.status == ToolCall.Status.EXECUTED
        assert call.output.startswith("[dry run] Would")
        # The answer waits as a draft reply; approved, it is the answer, and in a dry run nobody is emailed.
        assert approve_reply(Run.objects.get(pk=call.run_id), reviewer).status == Run.Status.COMPLETED
    assert not Refund.objects.exists()
    assert not OutgoingEmail.objects.exists()
    assert mail.outbox == []


def test_a_dry_run_simulates_calls_that_policy_lets_run_and_reversible_tools(make_run):
    small = make_run("Order A-1001 arrived broken. Please refund $15.", dry_run=True)
    assert (
        small.tool_calls.get(tool_name="issue_refund").output
        == "[dry run] Would record a refund of $15.00 on order A-1001 for “Item arrived damaged”. Nothing was written."
    )
    note = make_run("Cancel order A-1004, the customer changed their mind.", dry_run=True)
    added = note.tool_calls.get(tool_name="add_order_note")
    assert added.output.startswith("[dry run] Add a note to order A-1004")
    assert not Refund.objects.exists() and not OrderNote.objects.exists()


def test_a_dry_run_still_reads(make_run):
    run = make_run("Check the status of order A-1002 and refund $15 for the missing item.", dry_run=True)
    status = run.tool_calls.get(tool_name="get_order_status")
    assert '"order_id": "A-1002"' in status.output


def test_reviewers_can_preview_any_pending_call_and_nothing_is_written(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    response = client.get(reverse("approvals:call_preview", args=[call.pk]), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "the tool&#x27;s dry run; nothing was written" in html or "the tool's dry run; nothing was written" in html
    assert "[dry run] Would record a refund of $40.00 on order A-1001" in html
    page = client.get(reverse("approvals:call_preview", args=[call.pk])).content.decode()
    assert "[dry run] Would record a refund of $40.00 on order A-1001" in page
    assert '/approve/"' in page
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert not Refund.objects.exists()


def test_the_preview_shows_the_edited_arguments_a_reviewer_approved(make_run, client, reviewer, django_user_model):
    from approvals.models import PolicyRule

    PolicyRule.objects.create(
        name="two", tool_name="issue_refund", operator="any", outcome="review", required_approvals=2, order=1
    )
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "edit", arg_order_id="A-1001", arg_amount="12.5", arg_reason="Lid only")
    html = client.get(
        reverse("approvals:call_preview", args=[call.pk]), headers={"HX-Request": "true"}
    ).content.decode()
    assert "Would record a refund of $12.50 on order A-1001 for “Lid only”" in html


def test_the_new_run_form_starts_a_dry_run(client, reviewer, shop):
    client.force_login(reviewer)
    assert "Dry run" in client.get(reverse("agents:new_run")).content.decode()
    response = client.post(
        reverse("agents:new_run"), {"agent": "support", "request": "Refund $40 on A-1001", "dry_run": "on"}
    )
    run = Run.objects.get()
    assert response.status_code == 302
    assert run.dry_run is True


def test_a_dry_run_is_marked_on_its_calls(make_run, client, reviewer):
    call = pending_call(make_run, dry_run=True)
    client.force_login(reviewer)
    assert '<span class="dry-run"' in client.get(call_url(call)).content.decode()
