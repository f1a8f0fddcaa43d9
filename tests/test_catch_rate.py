"""The catch rate on the insight page: caught / planted per reviewer, tool and group, its 95 % Wilson interval,
missed and not-seen counts, time to decide practice against real calls, and the auditors' CSV export; who may
list practice calls before they are decided."""

import csv
import io

import pytest

from approvals import access, services
from approvals.insight import Window
from approvals.models import AuditEvent
from practice.insight import catch_rates, totals, trend, wilson
from practice.models import PracticeCall

from .practicing import plant, real_refund


def test_the_wilson_interval_matches_its_published_values():
    low, high = wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert tuple(round(x, 4) for x in wilson(0, 10)) == (0.0, 0.2775)
    assert tuple(round(x, 4) for x in wilson(10, 10)) == (0.7225, 1.0)
    assert wilson(0, 0) is None


def _decide(call, reviewer, verdict):
    if verdict == "reject":
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.review_hash, reason="wrong"
        )
    else:
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash, approve_anyway=True
        )


@pytest.fixture
def seeded(run, reviewer, reviewer2):
    """alice catches 3 of 4 practice calls, bob 0 of 2, one expires unseen, one still waits."""
    plan = [(reviewer, "reject")] * 3 + [(reviewer, "approve")] + [(reviewer2, "approve")] * 2
    for i, (who, verdict) in enumerate(plan):
        _decide(plant(real_refund(run, f"call_{i}")), who, verdict)
    services.toolcall_expire(call_id=plant(real_refund(run, "call_x")).pk, reason="nobody came")
    plant(real_refund(run, "call_w"))


def test_catch_rates_per_reviewer_come_out_right_from_seeded_decisions(seeded):
    rows = {row.label: row for row in catch_rates(Window.default(), "reviewer")}

    alice, bob, nobody = rows["alice"], rows["bob"], rows["(nobody: expired)"]
    assert (alice.caught, alice.missed, alice.planted, alice.percent) == (3, 1, 4, "75%")
    assert alice.interval == wilson(3, 4)
    assert (bob.caught, bob.missed, bob.rate) == (0, 2, 0.0)
    assert (nobody.not_seen, nobody.planted) == (1, 1)
    assert sum(row.waiting for row in rows.values()) == 1


def test_catch_rates_per_tool_and_group_sum_the_same_calls(seeded):
    (tool,) = catch_rates(Window.default(), "tool")
    (group,) = catch_rates(Window.default(), "group")
    total = totals(catch_rates(Window.default(), "reviewer"))

    assert tool.label == "issue_refund" and group.label == "(any reviewer)"
    assert (tool.caught, tool.missed, tool.not_seen, tool.waiting) == (3, 3, 1, 1)
    assert (group.caught, group.planted) == (tool.caught, tool.planted) == (total.caught, total.planted)
    assert tool.interval_percent == f"{wilson(3, 7)[0]:.0%}–{wilson(3, 7)[1]:.0%}"


def test_beside_the_rate_each_reviewers_real_approvals_and_batch_approvals_are_counted(seeded, run, reviewer):
    for i, (verdict, channel) in enumerate([("approve", "batch"), ("approve", "batch"), ("reject", "button")]):
        call = real_refund(run, f"call_real_{i}")
        reason = "wrong" if verdict == "reject" else ""
        services.toolcall_decide(
            call_id=call.pk,
            reviewer=reviewer,
            verdict=verdict,
            shown_hash=call.review_hash,
            reason=reason,
            channel=channel,
        )
    rows = {row.label: row for row in catch_rates(Window.default(), "reviewer")}

    alice, bob = rows["alice"], rows["bob"]
    assert (alice.real_decided, alice.real_approved, alice.real_batch, alice.approval_percent) == (3, 2, 2, "67%")
    assert (alice.caught, alice.planted) == (3, 4)  # the real decisions are beside the rate, never in it
    assert (bob.real_decided, bob.approval_percent) == (0, "–")
    assert totals(list(rows.values())).real_batch == 2


def test_approvals_made_quickly_or_with_the_facts_never_in_view_are_counted_beside_the_rate(
    seeded, run, reviewer, monkeypatch
):
    from approvals.policy.friction import Proof
    from approvals.services import shown

    monkeypatch.setattr(shown, "seconds_open", lambda call, reviewer: 1.5 if call.call_id == "call_q" else 20.0)
    for call_id, facts_in_view in [("call_q", True), ("call_unseen", False), ("call_read", True), ("call_plain", None)]:
        call = real_refund(run, call_id)
        proof = Proof(facts_in_view=facts_in_view)
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash, proof=proof
        )
    alice = {row.label: row for row in catch_rates(Window.default(), "reviewer")}["alice"]

    assert (alice.real_approved, alice.real_quick, alice.real_unseen) == (4, 1, 1)
    decided = AuditEvent.objects.filter(kind="decided", tool_call__call_id="call_unseen").get()
    assert decided.payload["shown"]["facts_in_view"] is False


def test_the_trend_stacks_each_days_caught_missed_and_not_seen_practice_calls(seeded):
    chart = trend(Window.default())

    titles = sorted(rect.title.split(": ")[1] for rect in chart.rects)
    assert titles == ["1 not seen", "3 caught", "3 missed"]  # today's column; the waiting one is not drawn
    assert {rect.css for rect in chart.rects} == {"o-caught", "o-missed", "o-not_seen"}


def test_the_insight_page_shows_the_catch_rate_to_auditors(seeded, client, auditor):
    client.force_login(auditor)

    assert 'hx-get="/insight/catch-rate/' in client.get("/insight/").content.decode()
    page = client.get("/insight/catch-rate/?by=reviewer").content.decode()
    assert "3 / 4" in page and "75%" in page and "Export for auditors" in page
    assert "Real calls approved" in page and "in a batch" in page
    assert "under 3 s" in page and "facts not in view" in page
    assert "Trend" in page and 'class="o-caught"' in page


def test_the_auditors_export_lists_every_practice_call_with_its_outcome(seeded, client, auditor):
    client.force_login(auditor)
    response = client.get("/insight/catch-rate.csv")

    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv")
    assert sorted(row["outcome"] for row in rows) == sorted(["caught"] * 3 + ["missed"] * 3 + ["not_seen", "waiting"])
    assert {row["reviewer"] for row in rows if row["outcome"] == "caught"} == {"alice"}


def test_a_reviewer_cannot_list_practice_calls_nor_read_the_catch_rate(seeded, client, reviewer):
    client.force_login(reviewer)

    assert not access.can_list_practice_calls(reviewer)
    assert access.practice_calls_for(reviewer, PracticeCall.objects.all()).count() == 0
    assert client.get("/insight/catch-rate/").status_code == 403
    assert client.get("/insight/catch-rate.csv").status_code == 403


def test_only_the_dedicated_permission_lists_undecided_practice_calls(seeded, auditor, django_user_model):
    from django.contrib.auth.models import Permission

    insight_reader = django_user_model.objects.create_user(username="ida", password="x")
    insight_reader.user_permissions.add(Permission.objects.get(codename="view_auditevent"))

    undecided = PracticeCall.objects.filter(outcome="waiting", tool_call__status="pending")
    assert access.practice_calls_for(auditor, undecided).count() == 1
    assert access.practice_calls_for(insight_reader, undecided).count() == 0
    assert access.practice_calls_for(insight_reader, PracticeCall.objects.all()).count() == 7


def test_the_admin_lists_undecided_practice_calls_only_to_the_dedicated_permission(seeded, client, auditor):
    from django.contrib.auth.models import Permission

    client.force_login(auditor)
    waiting = "/admin/practice/practicecall/?outcome__exact=waiting"  # the one waiting, and the one that expired
    assert client.get(waiting).context["cl"].result_count == 2
    auditor.groups.get(name="auditors").permissions.remove(Permission.objects.get(codename="audit_practice"))
    assert client.get(waiting).context["cl"].result_count == 1  # expired: not seen, no longer a secret
