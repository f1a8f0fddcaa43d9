"""The high-impact gate (approvals/policy/friction.py): Approve only after a time on the card and with the typed value,
checked on the server; no default button; a batch approval refuses such a call; a rule can mark some calls."""

import pytest
from django.test import Client
from django.urls import reverse

from approvals import services
from approvals.models import Decision, PolicyRule, ToolCall, ToolSetting
from approvals.policy import friction
from approvals.policy.friction import Proof

pytestmark = pytest.mark.django_db

REFUND_35 = "Order A-1002 arrived broken. Please refund $35."


@pytest.fixture
def gated(make_run):
    """A refund of $35 waiting for review; issue_refund is high impact: 5 s on the card, type the amount."""
    ToolSetting.objects.create(
        tool_name="issue_refund", high_impact=True, high_impact_seconds=5, confirm_field="amount"
    )
    return make_run(REFUND_35).tool_calls.get(status=ToolCall.Status.PENDING)


def shown_ago(call: ToolCall, seconds: float, monkeypatch) -> str:
    """The card's token, as if it had been shown `seconds` ago."""
    token = friction.shown_token(call)
    now = friction.time.time()
    monkeypatch.setattr(friction.time, "time", lambda: now + seconds)
    return token


def approve(call: ToolCall, reviewer, proof: Proof | None = None, **kwargs) -> Decision:
    verdict = kwargs.pop("verdict", "approve")
    return services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, proof=proof, **kwargs
    )


def refused(call: ToolCall, reviewer, proof: Proof | None = None, **kwargs) -> dict:
    with pytest.raises(services.HighImpactRefused) as refusal:
        approve(call, reviewer, proof, **kwargs)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.PENDING
    assert not Decision.objects.filter(tool_call=call).exists()
    return refusal.value.errors


def test_without_its_card_a_high_impact_call_is_not_approved(gated, reviewer):
    assert "approve it on its own card" in refused(gated, reviewer)["approve"][0]


def test_too_soon_after_the_card_was_shown_it_is_not_approved(gated, reviewer):
    errors = refused(gated, reviewer, Proof(token=friction.shown_token(gated), typed="35"))
    assert "more second(s)" in errors["approve"][0]


def test_a_wrong_or_missing_typed_value_is_refused_naming_what_to_type(gated, reviewer, monkeypatch):
    token = shown_ago(gated, 6, monkeypatch)
    assert refused(gated, reviewer, Proof(token=token, typed="350"))["confirm"] == [
        "Type the amount exactly as the call names it: 35.00."
    ]
    assert "confirm" in refused(gated, reviewer, Proof(token=token))


@pytest.mark.parametrize("typed", ["35", "35.00", "$35.00", " 35.0 "])
def test_after_the_time_with_the_amount_typed_it_is_approved(gated, reviewer, monkeypatch, typed):
    decision = approve(gated, reviewer, Proof(token=shown_ago(gated, 6, monkeypatch), typed=typed))
    assert decision.verdict == Decision.Verdict.APPROVE
    assert ToolCall.objects.get(pk=gated.pk).status != ToolCall.Status.PENDING


def test_a_token_of_another_call_or_a_tampered_one_is_refused(gated, reviewer, make_run, monkeypatch):
    other = make_run(REFUND_35).tool_calls.get(status=ToolCall.Status.PENDING)
    token = shown_ago(other, 6, monkeypatch)
    assert "own card" in refused(gated, reviewer, Proof(token=token, typed="35"))["approve"][0]
    assert "own card" in refused(gated, reviewer, Proof(token=token[:-2] + "xx", typed="35"))["approve"][0]


def test_an_edit_types_the_edited_value(gated, reviewer, monkeypatch):
    token = shown_ago(gated, 6, monkeypatch)
    edited = gated.review_arguments | {"amount": 30}
    assert (
        "30.00"
        in refused(gated, reviewer, Proof(token=token, typed="35"), verdict="edit", arguments=edited)["confirm"][0]
    )
    decision = approve(gated, reviewer, Proof(token=token, typed="30"), verdict="edit", arguments=edited)
    assert decision.verdict == Decision.Verdict.EDIT and decision.arguments["amount"] == 30


def test_a_rejection_needs_no_proof(gated, reviewer):
    services.toolcall_decide(
        call_id=gated.pk, reviewer=reviewer, verdict="reject", shown_hash=gated.review_hash, reason="Not this."
    )
    assert ToolCall.objects.get(pk=gated.pk).status == ToolCall.Status.REJECTED


def test_the_batch_approval_refuses_a_high_impact_call_saying_why(gated, reviewer):
    [(call_id, problem)] = services.toolcall_approve_many(reviewer=reviewer, items=[(gated.pk, gated.review_hash)])
    assert call_id == gated.pk and "high impact: approve it on its own card" in problem
    assert ToolCall.objects.get(pk=gated.pk).status == ToolCall.Status.PENDING


def test_a_rule_marks_only_the_calls_it_matches_high_impact(make_run, reviewer):
    PolicyRule.objects.create(
        name="Refunds over $20", tool_name="issue_refund", field="amount", operator=">", value=20,
        outcome="review", high_impact=True,
    )  # fmt: skip
    big = make_run(REFUND_35).tool_calls.get(status=ToolCall.Status.PENDING)
    small = make_run("Order A-1002 arrived broken. Please refund $15.").tool_calls.get(status=ToolCall.Status.PENDING)

    assert big.policy["high_impact"] is True and friction.friction_for(big) is not None
    assert friction.friction_for(small) is None
    refused(big, reviewer)
    approve(small, reviewer)


def test_the_card_has_no_default_button_a_countdown_and_the_field_to_type(gated, reviewer):
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("approvals:call", args=[gated.pk])).content.decode()

    assert "High impact" in page and 'data-dwell="5" disabled' in page and "enabled in 5 s" in page
    assert 'name="confirm"' in page and "To approve, type the amount: <strong>35.00</strong>" in page
    assert 'class="primary" data-key="a"' not in page and 'class="danger" data-key="r"' not in page


def test_approving_from_the_card_too_soon_says_why_and_changes_nothing(gated, reviewer):
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("approvals:call", args=[gated.pk])).content.decode()
    token = page.split('name="shown" value="')[1].split('"')[0]

    response = client.post(
        reverse("approvals:call_approve", args=[gated.pk]),
        {"arguments_hash": gated.review_hash, "shown": token, "confirm": "35"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 400 and "more second(s), then approve" in response.content.decode()
    assert ToolCall.objects.get(pk=gated.pk).status == ToolCall.Status.PENDING


def test_a_high_impact_call_is_never_offered_for_a_decision_in_chat(gated, monkeypatch):
    import dataclasses

    from approvals.access import chat_decisions_allowed
    from approvals.tools import registry

    tool = dataclasses.replace(registry.get("issue_refund"), chat_decisions=True)
    monkeypatch.setitem(registry._tools, tool.name, tool)
    assert chat_decisions_allowed(gated) == (False, "This call needs a closer look; decide it in ReviewHub.")
    setting = ToolSetting.objects.get(tool_name="issue_refund")
    setting.high_impact = False
    setting.save()
    assert chat_decisions_allowed(ToolCall.objects.get(pk=gated.pk)) == (True, "")
