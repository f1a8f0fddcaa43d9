"""The held model turn's card and its three decisions over HTTP: the page, the htmx pane, field errors."""

import pytest
from django.urls import reverse

from approvals.models import Message, ToolCall, TurnRule

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "detail"}


@pytest.fixture
def turn(make_run) -> ToolCall:
    TurnRule.objects.create(name="First turns", every_turn=True, until_step=1)
    run = make_run("Check the status of order A-1002.")
    return run.tool_calls.get(kind=ToolCall.Kind.TURN)


def post(client, call, decision, **fields):
    data = {"arguments_hash": call.review_hash, "decision": decision, **fields}
    return client.post(reverse("approvals:turn_decide", args=[call.pk]), data, **HTMX)


def test_the_card_shows_the_transcript_the_request_and_the_three_decisions(client, reviewer, turn):
    client.force_login(reviewer)
    html = client.get(reverse("approvals:call", args=[turn.pk]), **HTMX).content.decode()
    assert 'data-kind="turn"' in html and "Model turn 1 of the support agent" in html
    assert "Check the status of order A-1002." in html
    for button in ("Continue", "Add note and continue", "Send this reply"):
        assert button in html
    assert 'name="arguments_hash" value="' + turn.review_hash in html


def test_a_long_transcript_is_folded_to_its_last_messages(client, reviewer, turn):
    for i in range(6):
        Message.objects.create(run=turn.run, seq=10 + i, role="user", content=f"line {i}")
    turn.message = turn.run.messages.order_by("seq").last()
    turn.save()
    client.force_login(reviewer)
    html = client.get(reverse("approvals:call", args=[turn.pk])).content.decode()
    assert "Show the 4 earlier messages" in html
    assert html.index("line 1") < html.index("</details>") < html.index("line 5")


def test_the_queue_row_says_model_turn(client, reviewer, turn):
    client.force_login(reviewer)
    html = client.get(reverse("approvals:queue")).content.decode()
    assert 'class="kind kind-turn">Model turn<' in html


def test_continue_decides_the_turn(client, reviewer, turn):
    client.force_login(reviewer)
    response = post(client, turn, "continue")
    assert response.status_code == 200 and "Continued by <strong>alice</strong>" in response.content.decode()
    turn.refresh_from_db()
    assert turn.status == ToolCall.Status.APPROVED and turn.final_decision().verdict == "approve"


@pytest.mark.parametrize("decision", ["note", "reply"])
def test_an_empty_note_or_reply_gets_a_field_error_and_nothing_changes(client, reviewer, turn, decision):
    client.force_login(reviewer)
    response = post(client, turn, decision, **{decision: "  "})
    html = response.content.decode()
    assert response.status_code == 400
    assert f'name="{decision}" rows' in html and 'aria-invalid="true"' in html
    assert "The edited arguments are not valid" not in html
    turn.refresh_from_db()
    assert turn.is_pending and not turn.decisions.exists()


def test_a_note_is_kept_and_shown_with_the_outcome(client, reviewer, turn):
    client.force_login(reviewer)
    html = post(client, turn, "note", note="Be brief.").content.decode()
    assert "Continued with a note by <strong>alice</strong>" in html and "Note for the model: “Be brief.”" in html


def test_a_stale_card_is_refused(client, reviewer, turn):
    client.force_login(reviewer)
    response = client.post(
        reverse("approvals:turn_decide", args=[turn.pk]), {"arguments_hash": "x", "decision": "continue"}, **HTMX
    )
    assert response.status_code == 409
    turn.refresh_from_db()
    assert turn.is_pending


def test_without_javascript_a_decision_goes_back_to_the_queue(client, reviewer, turn):
    client.force_login(reviewer)
    data = {"arguments_hash": turn.review_hash, "decision": "reply", "reply": "Delivered Monday."}
    response = client.post(reverse("approvals:turn_decide", args=[turn.pk]), data)
    assert response.status_code == 302 and response.url == reverse("approvals:queue")


def test_the_requester_sees_why_they_may_not_decide(client, requester, turn):
    client.force_login(requester)
    html = client.get(reverse("approvals:call", args=[turn.pk])).content.decode()
    assert "You requested this run" in html and "Send this reply" not in html
    assert post(client, turn, "continue").status_code == 403


def test_the_run_page_marks_the_rows_a_reviewer_wrote(client, reviewer, turn):
    from agents import loop
    from approvals import services

    services.turn_decide(
        call_id=turn.pk, reviewer=reviewer, verdict="reply", shown_hash=turn.review_hash, text="Delivered Monday."
    )
    loop.advance(turn.run_id)
    client.force_login(reviewer)
    html = client.get(reverse("approvals:run", args=[turn.run_id])).content.decode()
    assert "written by alice, reviewer" in html and "Delivered Monday." in html


def test_a_post_naming_no_decision_is_refused_and_changes_nothing(client, reviewer, turn):
    client.force_login(reviewer)
    response = post(client, turn, "")
    assert response.status_code == 400 and "Choose Continue" in response.content.decode()
    turn.refresh_from_db()
    assert turn.is_pending


def test_a_reviewer_claims_and_releases_a_held_turn_as_a_call(client, reviewer, reviewer2, turn):
    client.force_login(reviewer)
    html = client.post(reverse("approvals:call_claim", args=[turn.pk]), **HTMX).content.decode()
    assert "You are reviewing this" in html
    client.force_login(reviewer2)
    html = client.get(reverse("approvals:call", args=[turn.pk]), **HTMX).content.decode()
    assert "Being reviewed by <strong>alice</strong>" in html
    client.force_login(reviewer)
    client.post(reverse("approvals:call_release", args=[turn.pk]), **HTMX)
    turn.refresh_from_db()
    assert turn.reviewing_by is None


def test_the_live_push_of_a_held_turn_is_a_model_turn_row(reviewer, turn):
    from approvals.live import fanout

    pushed = fanout.call_messages(turn.pk, [reviewer.pk])[reviewer.pk]
    assert f'id="row-{turn.pk}"' in pushed and 'class="kind kind-turn">Model turn<' in pushed


def test_insight_counts_decided_turns_without_failing(client, auditor, reviewer, turn):
    from approvals import services

    services.turn_decide(call_id=turn.pk, reviewer=reviewer, verdict="note", shown_hash=turn.review_hash, text="Hi")
    client.force_login(auditor)
    assert client.get(reverse("approvals:insight")).status_code == 200


def test_held_turns_are_never_offered_as_a_batch_of_similar_calls(client, reviewer, make_run, turn):
    make_run("Check the status of order A-1003.")  # a second held turn of the same agent
    client.force_login(reviewer)
    html = client.get(reverse("approvals:queue")).content.decode()
    assert html.count('class="kind kind-turn">Model turn<') == 2
    assert "model turn calls" not in html
