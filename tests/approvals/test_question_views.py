"""The question card: the prompt, the payload, the form generated from the schema; answering and declining."""

import html

import pytest
from django.urls import reverse

from approvals import services
from approvals.models import ToolCall
from tests.reviewing import WHICH, call_url, model_reply, post

pytestmark = pytest.mark.django_db


def answer(client, call, htmx=True, **data):
    data.setdefault("arguments_hash", call.review_hash)
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(reverse("approvals:call_answer", args=[call.pk]), data, headers=headers)


def test_the_card_shows_the_prompt_the_orders_and_a_choice_labelled_from_the_payload(client, reviewer, question):
    client.force_login(reviewer)
    page = html.unescape(client.get(call_url(question)).text)
    assert "Question: Which of Dana Smith's orders is the request about?" in page
    assert '<table class="payload">' in page and "Ceramic teapot (1)" in page and "$23.00" in page
    assert 'type="radio" name="answer_order_id" value="A-1005"' in page
    assert "A-1005 · " in page and "Tea sampler (1)" in page
    assert reverse("approvals:call_approve", args=[question.pk]) not in page and ">Decline</button>" in page


def test_the_queue_row_says_question_and_its_prompt(client, reviewer, question):
    client.force_login(reviewer)
    page = html.unescape(client.get(reverse("approvals:queue")).text)
    assert "Question: Which of Dana Smith's orders is the request about?" in page


def test_a_wrong_answer_is_shown_on_its_field_and_changes_nothing(client, reviewer, question):
    client.force_login(reviewer)
    response = answer(client, question, answer_order_id="A-1002")
    assert response.status_code == 400
    assert '<fieldset class="field invalid">' in response.text and "Choose one of the options." in response.text
    response = answer(client, question)
    assert response.status_code == 400 and "This field is required." in response.text
    question.refresh_from_db()
    assert question.is_pending and not question.decisions.exists()


def test_an_answer_settles_the_question_and_the_card_says_by_whom(client, reviewer, question):
    client.force_login(reviewer)
    response = answer(client, question, answer_order_id="A-1005")
    assert response.status_code == 200 and "queueChanged" in response.headers["HX-Trigger"]
    assert "Answered by <strong>alice</strong>" in response.text
    question.refresh_from_db()
    assert question.status == ToolCall.Status.EXECUTED and "A-1005" in question.output


def test_without_javascript_an_answer_goes_back_to_the_queue(client, reviewer, question):
    client.force_login(reviewer)
    response = answer(client, question, htmx=False, answer_order_id="A-1001")
    assert response.status_code == 302 and response["Location"] == reverse("approvals:queue")


def test_a_stale_question_is_refused(client, reviewer, question):
    client.force_login(reviewer)
    response = answer(client, question, arguments_hash=question.arguments_hash, answer_order_id="A-1001")
    assert response.status_code == 409
    question.refresh_from_db()
    assert question.is_pending


def test_declining_needs_a_reason_which_the_model_reads(client, reviewer, question):
    client.force_login(reviewer)
    assert post(client, question, "reject", htmx=True, reason="").status_code == 400
    response = post(client, question, "reject", htmx=True, reason="Ask the customer.")
    assert response.status_code == 200 and "Declined by <strong>alice</strong>" in response.text
    question.refresh_from_db()
    assert question.output == "Declined by reviewer (no answer): Ask the customer."


def test_the_run_page_shows_the_question_and_after_it_the_answer(client, reviewer, question):
    client.force_login(reviewer)
    url = reverse("approvals:run", args=[question.run_id])
    assert "Question: Which of Dana Smith's orders is the request about?" in html.unescape(client.get(url).text)
    answer(client, question, answer_order_id="A-1005")
    assert '{"order_id": "A-1005", "chosen_by": "a reviewer"}' in html.unescape(client.get(url).text)


def test_questions_are_not_grouped_for_a_batch_approval(client, reviewer, make_run):
    first, second = (make_run(WHICH).tool_calls.get(tool_name="choose_order") for _ in range(2))
    client.force_login(reviewer)
    page = html.unescape(client.get(reverse("approvals:queue")).text)
    assert page.count("Question: Which of Dana Smith's orders is the request about?") == 2
    assert "2 choose_order calls" not in page
    group = reverse("approvals:queue_group") + "?tool=choose_order&agent=support&band=none"
    assert f"row-{first.pk}" not in client.get(group).text


def test_the_auditor_reads_the_question_and_its_answer_in_the_calls_chain(client, auditor, reviewer, question):
    services.toolcall_answer(
        call_id=question.pk, reviewer=reviewer, shown_hash=question.review_hash, answer={"order_id": "A-1005"}
    )
    client.force_login(auditor)
    page = html.unescape(client.get(reverse("admin:approvals_toolcall_change", args=[question.pk])).text)
    assert "✓ Every event below matches its hash and follows the event before it in its chain." in page
    asked, answered = page.index("The tool asked a person"), page.index("Answered by <strong>alice</strong>")
    assert asked < answered and '"order_id": "A-1005"' in page[answered:]


def test_an_answer_to_a_question_already_answered_says_by_whom_whatever_was_posted(
    client, reviewer, reviewer2, question
):
    services.toolcall_answer(
        call_id=question.pk, reviewer=reviewer2, shown_hash=question.review_hash, answer={"order_id": "A-1001"}
    )
    client.force_login(reviewer)
    response = answer(client, question)  # nothing chosen: the form was disabled when the answer arrived
    assert response.status_code == 409 and "Already answered by bob" in response.text


def test_a_question_asked_again_after_a_decline_is_its_round_2_with_the_reason(client, reviewer, question):
    services.toolcall_decide(
        call_id=question.pk, reviewer=reviewer, verdict="reject", shown_hash=question.review_hash, reason="Not yet."
    )
    again = [services.ProposedCall("call_again", "choose_order", '{"email": "dana.smith@example.com"}')]
    model_reply(question.run, "Let me ask again.", again)
    second = question.run.tool_calls.get(call_id="call_again")
    assert (second.kind, second.revision, second.revision_of_id) == (ToolCall.Kind.QUESTION, 2, question.pk)
    client.force_login(reviewer)
    page = html.unescape(client.get(call_url(second)).text)
    assert "round 2" in page and "Not yet." in page


def test_the_question_its_payload_and_labels_are_escaped_and_hidden_characters_shown(client, reviewer, question):
    nasty = "<script>alert(1)</script>\u202e"
    schema = {"type": "object", "properties": {"pick": {"enum": ["x"], "title": nasty}}}
    ToolCall.objects.filter(pk=question.pk).update(
        question={"prompt": nasty, "schema": schema, "payload": {"rows": [{"c": nasty}], "labels": {"x": nasty}}}
    )
    client.force_login(reviewer)
    page = client.get(call_url(question)).text
    assert "<script>alert(1)</script>" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # prompt, table cell, label, field title
    assert "[U+202E]" in page and "\u202e" not in page
