"""The checkpoint's card and queue row: the draft, who it goes to and what the agent did; approve, edit the
text, or send it back with guidance, through the call views every decision takes."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from agents import loop
from approvals.models import Run, ToolCall, ToolSetting
from shop.models import OutgoingEmail
from tests.reviewing import call_url, post

pytestmark = pytest.mark.django_db

LOOKUP = "Check the status of order A-1003."


@pytest.fixture
def draft(make_run) -> ToolCall:
    run = make_run(LOOKUP)
    return run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT, status=ToolCall.Status.PENDING)


def test_the_card_shows_the_draft_who_it_goes_to_and_what_the_agent_did(client, reviewer, draft):
    client.force_login(reviewer)
    html = client.get(call_url(draft)).content.decode()
    assert "Checkpoint:" in html and "Reply to the customer" in html
    assert 'name="arg_draft"' in html and "Here is what happened:" in html
    assert "maria.garcia@example.com" in html and "Maria Garcia" in html
    assert "get_order_status" in html and "Look up order A-1003" in html and "Executed" in html
    assert ">Send back</button>" in html and ">Approve</button>" in html
    assert "Edit…" not in html  # the card is the checkpoint's own: the draft is edited in place


def test_the_preview_shows_the_email_approving_would_send_and_sends_nothing(client, reviewer, draft):
    client.force_login(reviewer)
    url = reverse("approvals:call_preview", args=[draft.pk])
    html = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "[dry run] Would send to maria.garcia@example.com" in html and "Subject: About your order A-1003" in html
    assert not OutgoingEmail.objects.exists()


def test_the_queue_row_says_checkpoint_reply_to_the_customer(client, reviewer, draft):
    client.force_login(reviewer)
    html = client.get(reverse("approvals:queue")).content.decode()
    row = html[html.index(f'id="row-{draft.pk}"') :]
    row = row[: row.index("</li>")]
    assert '<span class="kind">Checkpoint</span>' in row and "Reply to the customer" in row


def test_approve_from_the_card_sends_the_reply_and_completes_the_run(client, reviewer, draft):
    client.force_login(reviewer)
    assert post(client, draft, "approve", htmx=True).status_code == 200
    loop.advance(draft.run_id)
    assert Run.objects.get(pk=draft.run_id).status == Run.Status.COMPLETED
    assert OutgoingEmail.objects.get().body == draft.arguments["draft"]


def test_editing_the_text_keeps_the_order_and_sends_the_edited_text(client, reviewer, draft):
    client.force_login(reviewer)
    response = post(client, draft, "edit", htmx=True, arg_draft="Hi Maria, it ships today.", arg_order_id="A-1003")
    assert response.status_code == 200
    draft.refresh_from_db()
    assert draft.approved_arguments == {"draft": "Hi Maria, it ships today.", "order_id": "A-1003"}
    loop.advance(draft.run_id)
    assert OutgoingEmail.objects.get().body == "Hi Maria, it ships today."


def test_approving_the_text_as_shown_is_an_approval_not_an_edit(client, reviewer, draft):
    client.force_login(reviewer)
    as_sent = draft.arguments["draft"].replace("\n", "\r\n")  # how a browser sends a textarea's lines
    post(client, draft, "edit", htmx=True, arg_draft=as_sent, arg_order_id="A-1003")
    draft.refresh_from_db()
    assert draft.final_decision().verdict == "approve" and draft.approved_arguments == draft.arguments


def test_an_emptied_draft_is_refused_with_a_field_error_and_nothing_changes(client, reviewer, draft):
    client.force_login(reviewer)
    response = post(client, draft, "edit", htmx=True, arg_draft="", arg_order_id="A-1003")
    assert response.status_code == 400
    assert 'aria-invalid="true"' in response.content.decode()
    draft.refresh_from_db()
    assert draft.is_pending and not draft.decisions.exists()


def test_send_back_needs_guidance_and_then_a_new_draft_waits(client, reviewer, draft):
    client.force_login(reviewer)
    refused = post(client, draft, "respond", htmx=True, reason="Sent back for a new draft.", guidance=" ")
    assert refused.status_code == 400 and ToolCall.objects.get(pk=draft.pk).is_pending
    post(client, draft, "respond", htmx=True, reason="Sent back for a new draft.", guidance="Say sorry for the wait.")
    assert "Sent back" in client.get(call_url(draft)).content.decode()
    loop.advance(draft.run_id)
    second = ToolCall.objects.get(run=draft.run_id, status=ToolCall.Status.PENDING)
    assert second.kind == ToolCall.Kind.CHECKPOINT and "Say sorry for the wait." in second.arguments["draft"]
    assert not OutgoingEmail.objects.exists()


def test_a_group_set_for_the_checkpoint_decides_it(make_run, client, reviewer, senior):
    ToolSetting.objects.create(tool_name="reply_to_customer", group=Group.objects.get(name="senior"))
    run = make_run(LOOKUP)
    draft = run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT)
    assert draft.review_group.name == "senior"
    client.force_login(reviewer)  # not of the group: the draft is not even theirs to see
    assert post(client, draft, "approve", htmx=True).status_code == 404
    assert ToolCall.objects.get(pk=draft.pk).is_pending
    client.force_login(senior)
    assert post(client, draft, "approve", htmx=True).status_code == 200
