"""The insight page's numbers, against a fixture built by hand."""

import re
from datetime import UTC, date, datetime, timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals import audit, insight
from approvals.models import Decision, Message, PolicyRule, Run, ShadowResult, ToolCall

pytestmark = pytest.mark.django_db

D0, D1, D2 = date(2026, 11, 9), date(2026, 11, 10), date(2026, 11, 11)
WINDOW = insight.Window(D1, D2)


def at(day: date, seconds: float = 0) -> datetime:
    return datetime(day.year, day.month, day.day, 10, tzinfo=UTC) + timedelta(seconds=seconds)


@pytest.fixture
def calls(db, reviewer, reviewer2):
    """Calls proposed at 10:00 on D0, D1 and D2, decided by alice (fast) and bob, or not at all."""
    run = Run.objects.create(agent="support", request="Help.")
    message = Message.objects.create(run=run, seq=0, role="assistant")
    made = []

    def call(tool, day, verdict=None, who=None, after=0.0, action="review"):
        c = ToolCall.objects.create(
            run=run,
            message=message,
            call_id=f"c{len(made)}",
            tool_name=tool,
            status="pending",
            policy={"action": action},
        )
        ToolCall.objects.filter(pk=c.pk).update(created_at=at(day))
        if verdict:
            d = Decision.objects.create(tool_call=c, reviewer=who, verdict=verdict)
            Decision.objects.filter(pk=d.pk).update(created_at=at(day, after))
        made.append(c)

    call("issue_refund", D1, action="run")
    call("issue_refund", D1, "approve", reviewer, 2)
    call("issue_refund", D1, "approve", reviewer, 1)
    call("issue_refund", D1, "edit", reviewer2, 60)
    call("issue_refund", D1, "reject", reviewer2, 120)
    call("issue_refund", D2, "expire", None, 3600)
    call("issue_refund", D2, "approve", reviewer2, 30)
    call("send_email", D1, "approve", reviewer, 2.5)
    call("send_email", D2, "reject", reviewer2, 10)
    call("send_email", D2)  # still pending: no outcome yet
    call("issue_refund", D0, "approve", reviewer2, 5)  # before the window
    return made


def test_outcomes_per_day_and_tool_match_the_fixture(calls):
    counts = insight.outcome_counts(WINDOW)
    assert {tool: {day: dict(c) for day, c in days.items()} for tool, days in counts.items()} == {
        "issue_refund": {D1: {"auto_run": 1, "approve": 2, "edit": 1, "reject": 1}, D2: {"expire": 1, "approve": 1}},
        "send_email": {D1: {"approve": 1}, D2: {"reject": 1}},
    }
    refund, email = insight.outcomes(WINDOW)
    assert refund.tool == "issue_refund" and refund.totals == [1, 3, 1, 1, 1] and refund.total == 7
    assert email.totals == [0, 1, 0, 1, 0]
    assert len(refund.chart.rects) == 6  # one segment per (day, outcome) with calls


def test_outcomes_can_be_limited_to_one_tool(calls):
    assert [t.tool for t in insight.outcomes(insight.Window(D1, D2, "send_email"))] == ["send_email"]


def test_time_to_decision_per_tool_is_p50_and_p90_of_human_decisions(calls):
    times = {t.tool: t for t in insight.decision_times(WINDOW)}
    refund, email = times["issue_refund"], times["send_email"]
    # refund waits 1, 2, 30, 60, 120 s (the expiry is the system's, not a person's)
    assert refund.decisions == 5
    assert refund.p50 == timedelta(seconds=30) and refund.p90 == timedelta(seconds=96)
    assert email.decisions == 2
    assert email.p50 == timedelta(seconds=6.25) and email.p90 == timedelta(seconds=9.25)


def test_reviewer_load_and_who_approves_faster_than_anyone_can_read(calls):
    bob, alice = insight.reviewer_load(WINDOW)
    assert (bob.name, bob.decisions, bob.approved, bob.edited, bob.rejected) == ("bob", 4, 1, 1, 2)
    assert bob.median == timedelta(seconds=45) and bob.approve_median == timedelta(seconds=30)
    assert not bob.too_fast
    assert (alice.name, alice.decisions, alice.approved) == ("alice", 3, 3)
    assert alice.median == timedelta(seconds=2) and alice.too_fast


def test_the_insight_page_shows_the_numbers(client, auditor, calls):
    client.force_login(auditor)
    page = client.get(reverse("approvals:insight"), {"since": D1, "until": D2}).content.decode()
    assert "10 Nov 2026 – 11 Nov 2026" in page
    assert "<code>issue_refund</code> <small>7 calls</small>" in page
    assert "<td>issue_refund</td><td>5</td><td>30 s</td><td>1 min 36 s</td>" in page
    assert re.search(r"alice <strong class=\"flag\">approves faster than anyone can read</strong>", page)
    assert "bob <strong" not in page
    assert "No shadow rule matched a call proposed in these days." in page
    assert "Tue 10 Nov: 2 approved" in page  # a bar's tooltip


def test_the_insight_page_answers_htmx_with_its_body_only(client, auditor, calls):
    client.force_login(auditor)
    response = client.get(
        reverse("approvals:insight"), {"since": D1, "until": D2, "tool": "send_email"}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert "<html" not in body and "<code>send_email</code>" in body and "<code>issue_refund</code>" not in body


def test_a_bad_window_is_explained_and_the_last_30_days_shown(client, auditor, calls):
    client.force_login(auditor)
    page = client.get(reverse("approvals:insight"), {"since": D2, "until": D1}).content.decode()
    assert "The first day is after the last." in page and "Showing the last 30 days." in page


def test_the_insight_page_has_no_inline_script_or_style(client, auditor, calls):
    client.force_login(auditor)
    page = client.get(reverse("approvals:insight"), {"since": D1, "until": D2}).content.decode()
    assert " style=" not in page and "<style" not in page
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", page))


def test_only_people_who_may_read_the_trail_see_insight(client, reviewer, outsider):
    for user in (reviewer, outsider):
        client.force_login(user)
        assert client.get(reverse("approvals:insight")).status_code == 403
    client.logout()
    assert client.get(reverse("approvals:insight")).status_code == 302


def test_the_insight_page_runs_as_many_queries_with_more_data(client, auditor, calls, reviewer):
    client.force_login(auditor)
    url = reverse("approvals:insight") + f"?since={D0}&until={D2}"

    def count():
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        return len(captured)

    before = count()
    run = Run.objects.create(agent="support", request="More.")
    message = Message.objects.create(run=run, seq=0, role="assistant")
    for i in range(20):
        c = ToolCall.objects.create(
            run=run,
            message=message,
            call_id=f"more{i}",
            tool_name=f"tool_{i % 4}",
            status="approved",
            policy={"action": "review"},
        )
        ToolCall.objects.filter(pk=c.pk).update(created_at=at(D1))
        Decision.objects.filter(
            pk=Decision.objects.create(tool_call=c, reviewer=reviewer, verdict="approve").pk
        ).update(created_at=at(D1, 9))
    assert count() == before


def test_a_call_reviewed_again_counts_once_by_the_decision_of_its_last_round(calls, reviewer, reviewer2):
    call = calls[1]  # approved by alice in round 1, then sent back to the queue and rejected by bob
    Decision.objects.filter(tool_call=call).update(final=True, round=1)
    ToolCall.objects.filter(pk=call.pk).update(review_round=2)
    again = Decision.objects.create(tool_call=call, reviewer=reviewer2, verdict="reject", round=2)
    Decision.objects.filter(pk=again.pk).update(created_at=at(D1, 600))
    refund = insight.outcome_counts(WINDOW)["issue_refund"][D1]
    assert refund["approve"] == 1 and refund["reject"] == 2
    times = {t.tool: t for t in insight.decision_times(WINDOW)}
    assert times["issue_refund"].decisions == 5  # round 1's approval no longer settles the call


def test_time_to_approve_runs_from_when_the_reviewer_opened_the_call(calls, reviewer2):
    # bob approved the D2 refund 30 s after it was proposed, but opened it only 1 s before.
    approved = Decision.objects.get(reviewer=reviewer2, verdict="approve", tool_call__created_at=at(D2))
    with mock.patch("approvals.audit.timezone.now", return_value=at(D2, 29)):
        audit.record("review_claimed", tool_call=approved.tool_call, actor=reviewer2, payload={})
    bob = next(r for r in insight.reviewer_load(WINDOW) if r.name == "bob")
    assert bob.approve_median == timedelta(seconds=1) and bob.too_fast
    assert bob.median == timedelta(seconds=45)  # time to decide still runs from the proposal


def test_shadow_rules_agreement_with_people(calls):
    small = PolicyRule.objects.create(name="Small refunds", tool_name="issue_refund", outcome="run", shadow=True)
    never = PolicyRule.objects.create(name="No emails", tool_name="send_email", outcome="forbid", shadow=True)
    for call, rule, verdict, agreed in [
        (calls[1], small, "approve", True),
        (calls[4], small, "reject", False),
        (calls[5], small, "expire", None),
        (calls[8], never, "reject", True),
        (calls[10], small, "approve", True),  # proposed before the window
    ]:
        ShadowResult.objects.create(rule=rule, tool_call=call, outcome=rule.outcome, verdict=verdict, agreed=agreed)
    rows = {r.name: r for r in insight.shadow_agreement(WINDOW)}
    assert (rows["Small refunds"].matched, rows["Small refunds"].compared, rows["Small refunds"].agreed) == (3, 2, 1)
    assert rows["Small refunds"].percent == 50 and rows["No emails"].percent == 100


def test_answered_questions_and_turns_noted_or_replied_to_have_columns_of_their_own(client, auditor, calls, reviewer):
    run = calls[0].run
    for n, (tool, kind, verdict) in enumerate(
        [("choose_order", "question", "answer"), ("model turn", "turn", "note"), ("model turn", "turn", "reply")]
    ):
        paused = ToolCall.objects.create(
            run=run, message=calls[0].message, call_id=f"p{n}", tool_name=tool, kind=kind, status="executed"
        )
        ToolCall.objects.filter(pk=paused.pk).update(created_at=at(D1))
        decided = Decision.objects.create(tool_call=paused, reviewer=reviewer, verdict=verdict)
        Decision.objects.filter(pk=decided.pk).update(created_at=at(D1, 5))

    by_tool = {t.tool: t for t in insight.outcomes(WINDOW)}
    assert [key for key, _ in by_tool["model turn"].labels][-3:] == ["answer", "note", "reply"]
    assert by_tool["model turn"].totals[-3:] == [0, 1, 1] and by_tool["choose_order"].totals[-3:] == [1, 0, 0]
    assert by_tool["issue_refund"].totals == [1, 3, 1, 1, 1, 0, 0, 0]
    client.force_login(auditor)
    page = client.get(reverse("approvals:insight"), {"since": D1, "until": D2}).content.decode()
    assert "<th>Answered</th>" in page and "<th>Continued with a note</th>" in page


def test_without_other_pauses_the_outcomes_keep_their_five_columns(calls):
    assert all(t.labels == insight.OUTCOMES for t in insight.outcomes(WINDOW))
