"""A revision's card and queue row, its word diff, and rounds per tool on the insight page."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from approvals import insight, selectors
from approvals.kinds.revision import word_diff
from approvals.live import fanout
from approvals.models import Run, ToolCall
from approvals.web import triage
from ops import slack

from .reviewing import call_url, decide, propose, senior_rule

pytestmark = pytest.mark.django_db

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}
BODY = "Dear Dana,\nwe are sorry that your teapot arrived broken. We refunded the full $49.00 today.\nBest, Shop"
EMAIL = {"to": "dana.smith@example.com", "subject": "Your refund", "body": BODY, "order_id": "A-1001"}


def card(client, user, call: ToolCall) -> str:
    client.force_login(user)
    response = client.get(call_url(call))
    assert response.status_code == 200
    return response.content.decode()


def rejected_then_revised(run, reviewer, *, tool="issue_refund", first=REFUND, second=None, **decision):
    call = propose(run, tool, first, call_id="c1")
    decide(call, reviewer, "reject", **({"reason": "Too much"} | decision))
    return call, propose(run, tool, second or first, call_id="c2")


def test_a_round_2_card_shows_the_previous_proposal_the_reason_who_gave_it_and_the_diff(
    run, reviewer, reviewer2, client
):
    first, second = rejected_then_revised(
        run, reviewer, second=REFUND | {"amount": 30.5}, reason="Only the teapot is ours", guidance="Refund $30.50"
    )

    html = card(client, reviewer2, second)

    assert "Round 2 <small>the agent revised its proposal" in html
    article = html[html.index(f'id="call-{second.pk}"') :]
    header = article[: article.index("</header>")]
    assert '<span class="round-badge"' in header and "round 2</span>" in header
    assert "Sent back with guidance by <strong>alice</strong>" in html
    assert "Only the teapot is ours" in html and "Guidance for the agent: “Refund $30.50”" in html
    assert '<td class="before">45.0</td><td class="after">30.5</td>' in html  # the amount, round 1 against round 2
    assert first.description in html and reverse("approvals:call", args=[first.pk]) in html


def test_a_first_proposal_and_a_call_back_in_the_queue_say_no_round(run, reviewer, client):
    call = propose(run, "issue_refund", REFUND)
    ToolCall.objects.filter(pk=call.pk).update(review_round=2, returned_reason="The order total changed")
    call.refresh_from_db()

    html = card(client, reviewer, call)

    assert "Back in the queue" in html
    assert "round-badge" not in html and "Round 2" not in html


def test_a_long_text_is_compared_word_by_word_and_escaped(run, reviewer, reviewer2, client):
    revised = BODY.replace("the full $49.00", "the shipping, $7.50,") + "\n<script>alert(1)</script>\u202e"
    _, second = rejected_then_revised(
        run, reviewer, tool="send_email", first=EMAIL, second=EMAIL | {"body": revised}, reason="Wrong <b>amount</b>"
    )

    html = card(client, reviewer2, second)

    assert '<div class="worddiff">' in html
    assert "<del>full $49.00</del>" in html and "<ins>shipping, $7.50,</ins>" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "[U+202E]" in html
    assert "Wrong &lt;b&gt;amount&lt;/b&gt;" in html  # the reviewer's reason, escaped too
    assert '<div class="text">Dear Dana,\nwe are sorry' in html  # the previous draft, as text


def test_word_diff_keeps_every_word_once_and_marks_what_changed():
    parts = word_diff("refund the full amount now", "refund the shipping now")

    assert parts == [("same", "refund the "), ("del", "full amount"), ("ins", "shipping"), ("same", " now")]
    assert "".join(text for op, text in parts if op != "ins") == "refund the full amount now"


def test_a_very_long_text_is_compared_line_by_line():
    before = "\n".join(f"line {i} " + "word " * 5 for i in range(800))
    after = before.replace("line 400 ", "line four hundred ")

    parts = word_diff(before, after)

    assert [op for op, _ in parts] == ["same", "del", "ins", "same"]
    assert parts[1][1].startswith("line 400 ") and parts[1][1].endswith("\n")


def test_the_previous_round_of_another_group_is_not_shown(run, reviewer, senior, client):
    senior_rule()
    _, second = rejected_then_revised(
        run, senior, first=REFUND | {"amount": 600}, second=REFUND | {"amount": 400}, reason="Secret reason"
    )
    assert second.review_group is None

    html = card(client, reviewer, second)

    assert "Round 2" in html and "reviewed by another group" in html
    assert "Secret reason" not in html and "600" not in html


def test_the_queue_row_of_a_revision_carries_a_round_badge(run, reviewer, reviewer2, client):
    first, second = rejected_then_revised(run, reviewer, second=REFUND | {"amount": 40})
    client.force_login(reviewer2)

    html = client.get(reverse("approvals:queue")).content.decode()
    row = html[html.index(f'id="row-{second.pk}"') :]
    row = row[: row.index("</li>")]

    assert '<span class="round-badge"' in row and "round 2</span>" in row
    listed = selectors.queue_rows(reviewer2, triage.QueueFilter())
    with CaptureQueriesContext(connection) as badges:
        assert "round 2" in render_to_string("approvals/partials/round_badge.html", {"call": listed[0]})
    assert len(badges) == 0  # the triage list reads the round with its row


def test_the_insight_page_counts_rounds_per_tool(run, reviewer, reviewer2, auditor, client):
    first, second = rejected_then_revised(run, reviewer, second=REFUND | {"amount": 40})
    decide(second, reviewer2, "reject", reason="Still too much")
    third = propose(run, "issue_refund", REFUND | {"amount": 30}, call_id="c3")
    decide(third, reviewer, "approve")
    propose(run, "issue_refund", REFUND | {"amount": 35}, call_id="c4")  # after an approval: a new first proposal
    propose(run, "send_email", EMAIL, call_id="c5")
    propose(run, "issue_refund", REFUND | {"amount": 10}, call_id="c6")  # run at once: not reviewed
    turn = ToolCall.objects.create(run=run, message=third.message, call_id="t1", kind="turn", tool_name="model turn")

    rounds = {r.tool: r for r in insight.report(insight.Window.default()).rounds}

    assert (rounds["issue_refund"].reviewed, rounds["issue_refund"].revised, rounds["issue_refund"].most) == (2, 1, 3)
    assert rounds["issue_refund"].percent == 50
    assert (rounds["send_email"].reviewed, rounds["send_email"].revised, rounds["send_email"].most) == (1, 0, 1)
    assert turn.tool_name not in rounds
    client.force_login(auditor)
    html = client.get(reverse("approvals:insight")).content.decode()
    assert 'id="rounds-issue_refund"><td>issue_refund</td><td>2</td><td>1</td><td>50%</td><td>3</td>' in html


def test_rounds_outside_the_window_are_not_counted(run, reviewer):
    rejected_then_revised(run, reviewer, second=REFUND | {"amount": 40})
    ToolCall.objects.update(created_at=timezone.now() - timedelta(days=60))

    assert insight.report(insight.Window.default()).rounds == []


def test_the_live_push_of_a_revision_carries_its_badge_with_no_extra_query(run, reviewer, reviewer2, requester):
    _, second = rejected_then_revised(run, reviewer, second=REFUND | {"amount": 40})
    other = Run.objects.create(agent="support", request="Another customer.", requested_by=requester)
    first = propose(other, "issue_refund", REFUND, call_id="c1")
    fanout.call_messages(first.pk, [reviewer2.pk])  # warm: the user and their permissions are read once

    with CaptureQueriesContext(connection) as plain:
        pushed_first = fanout.call_messages(first.pk, [reviewer2.pk])[reviewer2.pk]
    with CaptureQueriesContext(connection) as revised:
        pushed_second = fanout.call_messages(second.pk, [reviewer2.pk])[reviewer2.pk]

    assert "round 2</span>" in pushed_second and "round-badge" not in pushed_first
    assert len(revised) == len(plain)


def test_a_group_of_similar_calls_marks_the_revision_among_them(run, reviewer, reviewer2, client):
    _, second = rejected_then_revised(run, reviewer, first=REFUND | {"amount": 48}, second=REFUND | {"amount": 30})
    client.force_login(reviewer2)

    group = {"tool": "issue_refund", "agent": "support", "band": "under-50"}
    html = client.get(reverse("approvals:queue_group"), group).content.decode()

    assert f'value="{second.pk}:{second.review_hash}"' in html and "round 2</span>" in html


def test_text_added_after_the_last_word_is_an_insertion_only():
    parts = word_diff('Total: "62.50"}', 'Total: "62.50"}\n\nThe parcel left today.')

    assert parts == [("same", 'Total: "62.50"}'), ("ins", "\n\nThe parcel left today.")]


def test_a_slack_message_of_a_revision_says_which_round_it_is(run, reviewer):
    first, second = rejected_then_revised(run, reviewer, second=REFUND | {"amount": 40})

    assert "round 2, revised after a reviewer sent it back" in json.dumps(slack.blocks(second))
    assert "round" not in json.dumps(slack.blocks(ToolCall.objects.get(pk=first.pk))[0])
