"""Practice calls: planted from a real call with one declared mistake, waiting like any call, never executed on
any path, never shown to an agent, scored when decided and the reviewer told at once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents import loop
from approvals import audit, services
from approvals.models import AuditEvent, PolicyRule, ToolCall
from approvals.planted import PracticeRefused
from practice.models import PracticeCall, PracticeSetting
from practice.services import practice_plant, practice_plant_due
from shop import demo_data
from shop.models import Refund
from tests.reviewing import propose
from tests.support import resumed

from .practicing import MISTAKES, plant, practice_of, real_refund


@pytest.fixture
def source(run):
    return real_refund(run)


def _force_approved(call: ToolCall) -> ToolCall:
    """As if something had approved the practice call to run (nothing does): the last line must still hold."""
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED, approved_arguments=call.arguments)
    return ToolCall.objects.select_related("run").get(pk=call.pk)


def test_a_practice_call_is_a_real_call_with_one_mistake_and_facts_fetched_for_real(source):
    call = plant(source)

    assert call.status == ToolCall.Status.PENDING and call.tool_name == "issue_refund"
    assert call.arguments == source.arguments | {"amount": 490.0}
    assert call.facts["warning"] == "The refund is more than the $49.00 still refundable on this order."
    assert call.pk > source.pk and call.expires_at is not None
    assert call.user_request == source.user_request and call.reasoning == source.reasoning
    assert practice_of(call).explanation == "the refund ($490.00) was ten times the order total ($49.00)"


def test_its_trail_reads_like_a_real_calls_and_the_planting_is_in_the_global_chain(source):
    call = plant(source)

    assert list(call.audit_events.values_list("kind", flat=True)) == ["proposed"]
    planted = AuditEvent.objects.get(kind=AuditEvent.Kind.PRACTICE_PLANTED)
    assert planted.run_id is None and planted.payload["tool_call"] == call.pk
    assert audit.verify().ok  # verify_audit's check covers the practice events


def test_the_local_runtime_refuses_to_execute_a_practice_call(source):
    call = _force_approved(plant(source))

    with pytest.raises(PracticeRefused):
        services.toolcall_execute(call=call)
    loop.advance(call.run_id)

    assert Refund.objects.count() == 0
    assert ToolCall.objects.get(pk=call.pk).status != ToolCall.Status.EXECUTED
    assert not AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.EXECUTING).exists()


def test_approving_a_practice_call_runs_nothing_resumes_nothing_and_says_it_was_missed(source, reviewer):
    call = plant(source)
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash, approve_anyway=True
    )

    call.refresh_from_db()
    assert call.status == ToolCall.Status.CANCELLED and Refund.objects.count() == 0
    assert resumed == []
    assert practice_of(call).outcome == PracticeCall.Outcome.MISSED
    assert practice_of(call).feedback() == (
        "This was a practice call: the refund ($490.00) was ten times the order total ($49.00). You approved it."
    )
    assert AuditEvent.objects.get(tool_call=call, kind="practice_scored").payload["outcome"] == "missed"


def test_rejecting_or_responding_to_a_practice_call_catches_it(run, reviewer):
    rejected, responded = plant(real_refund(run)), plant(real_refund(run, "call_2"), "other_customers_order")
    services.toolcall_decide(
        call_id=rejected.pk, reviewer=reviewer, verdict="reject", shown_hash=rejected.review_hash, reason="too much"
    )
    services.toolcall_respond(
        call_id=responded.pk,
        reviewer=reviewer,
        shown_hash=responded.review_hash,
        reason="wrong order",
        guidance="Refund A-1001 instead.",
    )

    assert practice_of(rejected).feedback().endswith("You caught it.")
    assert practice_of(responded).outcome == PracticeCall.Outcome.CAUGHT
    assert resumed == []


def test_an_edit_that_changes_the_mistaken_value_catches_it_and_one_that_keeps_it_misses_it(run, reviewer, reviewer2):
    fixed, kept = plant(real_refund(run)), plant(real_refund(run, "call_2"))
    services.toolcall_decide(
        call_id=fixed.pk,
        reviewer=reviewer,
        verdict="edit",
        shown_hash=fixed.review_hash,
        arguments=fixed.arguments | {"amount": 45},
    )
    services.toolcall_decide(
        call_id=kept.pk,
        reviewer=reviewer2,
        verdict="edit",
        shown_hash=kept.review_hash,
        arguments=kept.arguments | {"reason": "Item arrived broken"},
        approve_anyway=True,
    )

    assert practice_of(fixed).outcome == PracticeCall.Outcome.CAUGHT
    assert practice_of(kept).outcome == PracticeCall.Outcome.MISSED
    assert Refund.objects.count() == 0


def test_a_batch_approval_of_a_practice_call_runs_nothing_and_tells_the_reviewer(source, reviewer, client):
    call = plant(source, "other_customers_order")
    client.force_login(reviewer)

    response = client.post("/approve-selected/", {"calls": [f"{call.pk}:{call.review_hash}"]}, follow=True)

    texts = [str(m) for m in response.context["messages"]]
    assert any("This was a practice call: the refund was for order A-1002" in text for text in texts), texts
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.CANCELLED
    assert Refund.objects.count() == 0 and resumed == []


def test_a_rule_that_would_run_the_tool_without_review_plants_nothing(source):
    PolicyRule.objects.create(name="all refunds run", tool_name="issue_refund", outcome="run")

    assert practice_plant(source=source, mistake=MISTAKES["amount_above_refundable"]) is None
    assert ToolCall.objects.filter(tool_name="issue_refund").count() == 1


def test_a_practice_call_a_rule_lets_through_after_planting_is_still_never_run(source, reviewer):
    call = plant(source, "other_customers_order")
    PolicyRule.objects.create(name="all refunds run", tool_name="issue_refund", outcome="run")
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)

    with pytest.raises(PracticeRefused):
        services.toolcall_execute(call=_force_approved(call))
    assert Refund.objects.count() == 0


def test_expiry_of_a_practice_call_counts_as_not_seen_and_resumes_nothing(source):
    call = plant(source)
    services.toolcall_expire(call_id=call.pk, reason="nobody answered in time")

    practice = practice_of(call)
    assert practice.settled_outcome == PracticeCall.Outcome.NOT_SEEN
    assert practice.feedback().endswith("Nobody decided it before its deadline.")
    assert resumed == []
    call.run.refresh_from_db()
    assert call.run.status == "completed"  # over: the sweep never finds it stuck
    assert call.run_id not in services.stuck_runs(now=timezone.now() + timedelta(days=1))


def test_practice_calls_are_planted_at_the_configured_rate_from_the_newest_real_call(run):
    PracticeSetting.objects.create(tool_name="issue_refund", rate=2, mistakes=["amount_above_refundable"])
    real_refund(run)
    assert practice_plant_due() == []

    second = propose(run, "issue_refund", {"order_id": "A-1002", "amount": 35, "reason": "Missing sock"}, "call_2")
    planted = practice_plant_due()

    assert len(planted) == 1 and planted[0].source_id == second.pk
    assert planted[0].tool_call.arguments["amount"] == 1299.0
    assert practice_plant_due() == []  # the count starts again after a practice call


def test_the_demo_plants_a_practice_call_once_its_first_two_refunds_wait(run):
    demo_data.seed_practice()
    real_refund(run)
    propose(run, "issue_refund", {"order_id": "A-1002", "amount": 35, "reason": "Missing sock"}, "call_2")

    (planted,) = practice_plant_due(choose=lambda mistakes: None)
    assert planted.tool_call.status == ToolCall.Status.PENDING and planted.tool_name == "issue_refund"


def test_the_card_tells_the_reviewer_at_once_and_only_them(source, reviewer, reviewer2, client):
    call = plant(source)
    client.force_login(reviewer)

    response = client.post(
        f"/calls/{call.pk}/reject/", {"arguments_hash": call.review_hash, "reason": "ten times"}, HTTP_HX_REQUEST="true"
    )

    told = "This was a practice call: the refund ($490.00) was ten times the order total ($49.00). You caught it."
    assert told in response.content.decode()
    client.force_login(reviewer2)
    assert "practice call" not in client.get(f"/calls/{call.pk}/", HTTP_HX_REQUEST="true").content.decode()
