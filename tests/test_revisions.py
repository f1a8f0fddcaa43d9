"""Revision rounds: which earlier call a new proposal revises (approvals/kinds/revision.py), through the gate and the
agent API, and what the trail records of it."""

import pytest
from django.urls import reverse

from approvals import services
from approvals.kinds.revision import link_revision, revised_call
from approvals.models import AuditEvent, Run, ToolCall

from .reviewing import advance, decide, pending_call, propose

pytestmark = pytest.mark.django_db

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}


def refund(run: Run, call_id: str, **changes) -> ToolCall:
    return propose(run, "issue_refund", REFUND | changes, call_id=call_id)


def reject(call: ToolCall, reviewer, reason: str = "Too much", guidance: str = "") -> None:
    decide(call, reviewer, "reject", reason=reason, guidance=guidance)


def test_a_proposal_after_a_reject_is_round_2_of_the_rejected_call(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)

    second = refund(run, "c2", amount=40)

    assert (first.revision, first.revision_of) == (1, None)
    assert (second.revision, second.revision_of) == (2, first)
    assert second.status == ToolCall.Status.PENDING


def test_a_proposal_after_a_respond_is_a_revision_too(run, reviewer):
    first = refund(run, "c1")
    services.toolcall_respond(
        call_id=first.pk, reviewer=reviewer, shown_hash=first.review_hash, reason="No", guidance="Refund the shipping"
    )

    assert refund(run, "c2", amount=30).revision_of == first


def test_rounds_count_up_across_three_proposals(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)
    second = refund(run, "c2", amount=40)
    reject(second, reviewer, reason="Still too much")
    third = refund(run, "c3", amount=35)

    assert [c.revision for c in (first, second, third)] == [1, 2, 3]
    assert third.revision_of == second and second.revision_of == first


def test_nothing_is_linked_after_an_approval(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)
    second = refund(run, "c2", amount=40)
    decide(second, reviewer, "approve")

    third = refund(run, "c3", amount=35)

    assert (third.revision, third.revision_of) == (1, None)


def test_nothing_is_linked_after_an_edit_or_an_expiry(run, reviewer):
    first = refund(run, "c1")
    decide(first, reviewer, "edit", arguments=REFUND | {"amount": 30})
    assert refund(run, "c2").revision == 1

    second = ToolCall.objects.get(call_id="c2")
    services.toolcall_expire(call_id=second.pk, now=second.expires_at)
    second.refresh_from_db()
    assert second.status == ToolCall.Status.EXPIRED
    assert refund(run, "c3").revision == 1


def test_a_proposal_policy_runs_at_once_is_not_a_revision_and_ends_the_chain(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)

    small = refund(run, "c2", amount=15)  # a rule runs refunds of at most $20
    later = refund(run, "c3", amount=30)

    assert small.status != ToolCall.Status.PENDING and (small.revision, small.revision_of) == (1, None)
    assert (later.revision, later.revision_of) == (1, None)


def test_a_call_the_gate_refused_in_between_is_skipped(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)
    refused = refund(run, "c2", amount=-5)
    assert refused.status == ToolCall.Status.INVALID

    assert refund(run, "c3", amount=40).revision_of == first


def test_another_tool_or_another_run_is_not_linked(run, reviewer, requester):
    first = refund(run, "c1")
    reject(first, reviewer)
    email = propose(run, "send_email", {"to": "dana.smith@example.com", "subject": "Hi", "body": "Hello"}, "c2")
    other_run = Run.objects.create(agent="support", request="Another customer.", requested_by=requester)
    elsewhere = refund(other_run, "c1")

    assert (email.revision, email.revision_of) == (1, None)
    assert (elsewhere.revision, elsewhere.revision_of) == (1, None)


def test_link_revision_works_for_any_kind_stored_elsewhere(run, reviewer):
    """A checkpoint stored by its own code gets rounds by calling link_revision before storing it."""
    draft = ToolCall.objects.create(
        run=run,
        message=run.messages.first(),
        call_id="cp1",
        kind=ToolCall.Kind.CHECKPOINT,
        tool_name="reply to the customer",
        status=ToolCall.Status.PENDING,
        arguments={"draft": "Dear Dana, no."},
    )
    reject(draft, reviewer, reason="Be kinder")
    again = ToolCall(run=run, call_id="cp2", kind=ToolCall.Kind.CHECKPOINT, tool_name="reply to the customer")

    recorded = link_revision(again)

    assert (again.revision, again.revision_of) == (2, draft)
    assert recorded == {"revision": 2, "revision_of": draft.pk, "revision_of_call_id": "cp1"}


def test_the_proposal_event_of_a_revision_names_the_call_it_revises(run, reviewer):
    first = refund(run, "c1")
    reject(first, reviewer)
    second = refund(run, "c2", amount=40)

    proposed = {e.tool_call_id: e.payload for e in AuditEvent.objects.filter(kind=AuditEvent.Kind.PROPOSED)}

    assert "revision_of" not in proposed[first.pk]
    assert proposed[second.pk]["revision_of"] == first.pk
    assert proposed[second.pk]["revision_of_call_id"] == "c1" and proposed[second.pk]["revision"] == 2


def test_a_remote_agents_proposal_after_a_reject_is_its_next_round(refund_agent, reviewer):
    first = refund_agent.propose()
    call = ToolCall.objects.get(pk=first["id"])
    reject(call, reviewer, reason="The order total is $49")

    second = refund_agent.propose(arguments={"order_id": "A-1001", "amount": 49}, idempotency_key="4711-2")

    assert (first["revision"], first["revision_of"]) == (1, None)
    assert (second["revision"], second["revision_of"]) == (2, call.pk)
    assert ToolCall.objects.get(pk=second["id"]).revision_of == call
    assert refund_agent.get(f"/calls/{second['id']}").json()["revision_of"] == call.pk


def test_a_remote_agents_proposal_after_an_approval_starts_over(refund_agent, reviewer):
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    decide(call, reviewer, "approve", approve_anyway=True)

    second = refund_agent.propose(idempotency_key="4711-2")

    assert (second["revision"], second["revision_of"]) == (1, None)


def test_the_call_chain_in_the_admin_says_which_call_a_revision_revises(run, reviewer, auditor, client):
    first = refund(run, "c1")
    reject(first, reviewer)
    second = refund(run, "c2", amount=40)
    client.force_login(auditor)

    html = client.get(reverse("admin:approvals_toolcall_change", args=[second.pk])).content.decode()

    assert "Round 2: revises" in html and reverse("admin:approvals_toolcall_change", args=[first.pk]) in html


def test_the_run_page_marks_each_revision_with_its_round(run, reviewer, client):
    first = refund(run, "c1")
    reject(first, reviewer)
    second = refund(run, "c2", amount=40)
    client.force_login(reviewer)

    html = client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    row = html[html.index(f'id="run-call-{second.pk}"') :]

    assert "round 2</span>" in row[: row.index("</tr>")]
    assert "round-badge" not in html[html.index(f'id="run-call-{first.pk}"') : html.index(f'id="run-call-{second.pk}"')]


def test_the_admin_calls_a_decisions_round_a_review_round_not_a_revision_round(run, reviewer, auditor, client):
    first = refund(run, "c1")
    reject(first, reviewer)
    client.force_login(auditor)

    html = client.get(reverse("admin:approvals_decision_change", args=[first.decisions.get().pk])).content.decode()

    assert "review round (a re-review after a return to the queue)" in html.lower()


def test_a_pause_whose_kind_is_set_after_the_gate_still_finds_its_earlier_round(run, reviewer):
    draft = ToolCall.objects.create(
        run=run,
        message=run.messages.first(),
        call_id="cp1",
        kind=ToolCall.Kind.CHECKPOINT,
        tool_name="reply to the customer",
        status=ToolCall.Status.PENDING,
        arguments={"draft": "Dear Dana, no."},
    )
    reject(draft, reviewer, reason="Be kinder")
    as_the_gate_builds_it = ToolCall(run=run, call_id="cp2", tool_name="reply to the customer")

    assert revised_call(as_the_gate_builds_it) == draft


def test_the_agent_acting_on_a_reviewers_guidance_proposes_round_2(make_run, reviewer, model):
    first = pending_call(make_run, "Order A-1001 arrived broken. Please refund $490.")
    services.toolcall_respond(
        call_id=first.pk,
        reviewer=reviewer,
        shown_hash=first.review_hash,
        reason="The order total is $49",
        guidance="Refund $45 instead",
    )

    advance(first)  # the model reads the guidance and proposes the refund again

    second = first.run.tool_calls.get(status=ToolCall.Status.PENDING)
    assert second.arguments["amount"] == 45 and (second.revision, second.revision_of) == (2, first)
