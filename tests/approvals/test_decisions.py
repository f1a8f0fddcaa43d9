"""Deciding a call through the review pages: one transaction, one decision, clear answers."""

import pytest
from django.test import Client
from django.urls import reverse

from approvals import services
from approvals.models import AuditEvent, Decision, ToolCall
from tests import support
from tests.reviewing import action_url, call_url, pending_call, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def refund_call(make_run):
    return pending_call(make_run, "Order A-1001 arrived broken. Please refund $490.")


def test_the_queue_lists_each_pending_call_and_its_card_has_everything_needed(client, reviewer, refund_call):
    client.force_login(reviewer)
    row = client.get(reverse("approvals:queue")).content.decode()
    assert "Refund $490.00 to Dana Smith for order A-1001 (order total $49.00)" in row
    assert "<small>Amount</small> $490.00" in row and "<small>Order id</small> A-1001" in row
    page = client.get(reverse("approvals:call", args=[refund_call.pk])).content.decode()
    assert "&quot;amount&quot;: 490.0" in page
    assert "Order total" in page and "$49.00" in page
    assert "I&#x27;ll refund $490.00" in page
    assert "Order A-1001 arrived broken. Please refund $490." in page
    assert reverse("approvals:run", args=[refund_call.run_id]) in page
    assert "59 min left" in page


def test_anonymous_reviewers_are_sent_to_log_in(client, refund_call):
    response = client.get(reverse("approvals:queue"))
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    response = post(client, refund_call, action="approve", approve_anyway="1")
    assert response.status_code == 302
    assert not Decision.objects.exists()


def test_it_approves_and_resumes_the_run_on_commit(client, reviewer, refund_call, django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, refund_call, htmx=True, action="approve", approve_anyway="1")
    assert response.status_code == 200
    assert "Approved by <strong>alice</strong>" in response.content.decode()
    refund_call.refresh_from_db()
    assert refund_call.status == ToolCall.Status.APPROVED
    assert support.resumed == [refund_call.run_id]
    decision = Decision.objects.get()
    assert decision.reviewer == reviewer and decision.arguments_hash == refund_call.arguments_hash


def test_without_javascript_a_decision_redirects_to_the_queue(client, reviewer, refund_call):
    client.force_login(reviewer)
    response = post(client, refund_call, action="approve", approve_anyway="1")
    assert response.status_code == 302 and response["Location"] == reverse("approvals:queue")


def test_a_second_decision_gets_already_decided_and_changes_nothing(client, reviewer, reviewer2, refund_call):
    client.force_login(reviewer)
    post(client, refund_call, action="approve", approve_anyway="1")
    other = Client()
    other.force_login(reviewer2)
    response = post(other, refund_call, htmx=True, action="reject", reason="no")
    assert response.status_code == 409
    assert "Already approved by alice at" in response.content.decode()
    assert Decision.objects.count() == 1
    assert ToolCall.objects.get(pk=refund_call.pk).status == ToolCall.Status.APPROVED


def test_reject_needs_a_reason(client, reviewer, refund_call):
    client.force_login(reviewer)
    response = post(client, refund_call, htmx=True, action="reject", reason="  ")
    assert response.status_code == 400
    assert "A reason is required" in response.content.decode()
    assert not Decision.objects.exists()


def test_reject_gives_the_model_the_reason(client, reviewer, refund_call):
    client.force_login(reviewer)
    post(client, refund_call, action="reject", reason="Total is $49")
    refund_call.refresh_from_db()
    assert refund_call.status == ToolCall.Status.REJECTED
    assert refund_call.run.messages.get(role="tool").content == "Rejected by reviewer: Total is $49"


def test_the_edit_form_is_prefilled_from_the_arguments(client, reviewer, refund_call):
    client.force_login(reviewer)
    page = client.get(call_url(refund_call) + "?edit=1").content.decode()
    assert 'name="arg_amount" value="490.0"' in page
    assert 'name="arg_order_id" value="A-1001"' in page
    assert "the tool cannot be changed" in page


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"arg_amount": "forty"}, "amount", "Enter a number."),
        ({"arg_amount": "-5"}, "amount", "Input should be greater than 0"),
        ({"arg_amount": "4.999"}, "amount", "Use at most two decimals."),
        ({"arg_order_id": "1001"}, "order_id", "String should match pattern"),
    ],
)
def test_an_invalid_edit_gets_a_field_error_and_nothing_is_decided(
    client, reviewer, refund_call, fields, field, message
):
    client.force_login(reviewer)
    data = {"arg_order_id": "A-1001", "arg_amount": "49", "arg_reason": "damaged", **fields}
    response = post(client, refund_call, htmx=True, action="edit", **data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Decision.objects.exists()
    assert ToolCall.objects.get(pk=refund_call.pk).status == ToolCall.Status.PENDING


def test_an_edit_as_json_with_an_unknown_field_or_bad_json_is_refused(client, reviewer, refund_call):
    client.force_login(reviewer)
    response = post(
        client,
        refund_call,
        htmx=True,
        action="edit",
        arguments_json='{"order_id": "A-1001", "amount": 49, "reason": "x!", "tool": "delete_customer"}',
    )
    assert response.status_code == 400 and "Unknown field." in response.content.decode()
    response = post(client, refund_call, htmx=True, action="edit", arguments_json='{"amount": 49,')
    assert response.status_code == 400 and "Not valid JSON" in response.content.decode()
    assert not Decision.objects.exists()


def test_an_edit_cannot_change_the_tool(client, reviewer, refund_call):
    client.force_login(reviewer)
    post(
        client,
        refund_call,
        action="edit",
        tool_name="send_email",
        arg_order_id="A-1001",
        arg_amount="49",
        arg_reason="damaged",
    )
    call = ToolCall.objects.get(pk=refund_call.pk)
    assert call.tool_name == "issue_refund"
    assert call.approved_arguments == {"order_id": "A-1001", "amount": 49.0, "reason": "damaged"}
    assert Decision.objects.get().verdict == Decision.Verdict.EDIT


def test_a_decision_binds_to_the_arguments_that_were_shown(client, reviewer, refund_call):
    client.force_login(reviewer)
    response = post(client, refund_call, htmx=True, action="approve", arguments_hash="0" * 64)
    assert response.status_code == 409
    assert "changed since you opened it" in response.content.decode()
    assert not Decision.objects.exists()


def test_the_requester_cannot_decide_their_own_runs_calls(client, requester, refund_call):
    client.force_login(requester)
    response = post(client, refund_call, htmx=True, action="approve")
    assert response.status_code == 403
    assert "You requested this run" in response.content.decode()
    assert not Decision.objects.exists()


def test_a_user_who_is_not_a_reviewer_cannot_see_or_decide(client, outsider, refund_call):
    client.force_login(outsider)
    assert client.get(call_url(refund_call)).status_code == 404
    assert post(client, refund_call, action="approve").status_code == 404
    assert not Decision.objects.exists()


def test_every_post_needs_the_csrf_token(reviewer, refund_call):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert post(client, refund_call, action="approve").status_code == 403
    assert not Decision.objects.exists()


def test_an_unknown_verdict_is_a_clear_error(reviewer, refund_call):
    with pytest.raises(services.DecisionError, match="Unknown decision 'launch'"):
        services.toolcall_decide(
            call_id=refund_call.pk, reviewer=reviewer, verdict="launch", shown_hash=refund_call.review_hash
        )
    assert not Decision.objects.exists()


def test_a_decision_is_never_made_by_a_get(client, reviewer, refund_call):
    client.force_login(reviewer)
    for action in ("approve", "edit", "reject", "respond", "claim", "release", "preview_edit"):
        assert client.get(action_url(refund_call, action)).status_code == 405
    assert not Decision.objects.exists()


def test_the_reviewer_comes_from_the_session_not_the_form(client, reviewer, reviewer2, refund_call):
    client.force_login(reviewer)
    post(client, refund_call, action="approve", approve_anyway="1", reviewer=reviewer2.pk, reviewer_id=reviewer2.pk)
    assert Decision.objects.get().reviewer == reviewer
    assert AuditEvent.objects.get(kind="decided").actor == reviewer


def test_untrusted_text_is_escaped_and_hidden_characters_shown(client, reviewer, make_run, model):
    model.script(
        {
            "content": "<script>alert(1)</script> ok\u202e",
            "tool_calls": [
                {"name": "issue_refund", "arguments": {"order_id": "A-1001", "amount": 30, "reason": "x\u200by<b>z"}}
            ],
        }
    )
    call = make_run("Refund order A-1001").tool_calls.get()
    client.force_login(reviewer)
    page = client.get(reverse("approvals:call", args=[call.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "[U+202E]" in page and "[U+200B]" in page
    assert "<b>z" not in page


def test_a_new_run_from_the_dashboard_is_stored_and_started(client, reviewer, shop, django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("agents:new_run"), {"agent": "support", "request": "Look up order A-1001."})
    run = reviewer.runs.get()
    assert response.status_code == 302 and response["Location"] == reverse("approvals:run", args=[run.pk])
    assert support.resumed == [run.pk]
    assert list(run.messages.values_list("role", flat=True)) == ["system", "user"]


def test_a_new_run_with_an_unknown_agent_is_refused_by_field(client, reviewer, shop):
    client.force_login(reviewer)
    response = client.post(reverse("agents:new_run"), {"agent": "hacker", "request": ""})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert "This field is required" in response.content.decode()


def test_the_run_page_shows_the_transcript_and_calls_and_offers_retry_when_failed(client, reviewer, make_run, model):
    model.script({"error": 500}, {"error": 500}, {"error": 500})
    run = make_run("Look up order A-1001.")
    client.force_login(reviewer)
    page = client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    assert "failed after 3 attempts" in page
    assert '/retry/"' in page
    assert "Look up order A-1001." in page


def test_cancelling_a_waiting_run_takes_its_calls_out_of_the_queue(client, reviewer, refund_call):
    client.force_login(reviewer)
    client.post(reverse("approvals:run_cancel", args=[refund_call.run_id]))
    refund_call.refresh_from_db()
    assert refund_call.status == ToolCall.Status.CANCELLED
    assert refund_call.run.status == "cancelled"
    assert AuditEvent.objects.filter(run=refund_call.run, kind="cancelled", actor=reviewer).exists()
    response = post(client, refund_call, htmx=True, action="approve")
    assert response.status_code == 409
    assert "no longer waiting for review (it is cancelled)" in response.content.decode()
    assert "Refund $490.00" not in client.get(reverse("approvals:queue")).content.decode()


def test_the_run_pages_htmx_answer_is_its_body_partial(client, reviewer, refund_call):
    client.force_login(reviewer)
    url = reverse("approvals:run", args=[refund_call.run_id]) + "?fragment=body"
    html = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'id="run-status"' in html and "<html" not in html and "Refund $490.00" in html
