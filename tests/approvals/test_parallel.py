"""Several calls of one step: each decided on its own, bound to its own id and hash;
a batch approval is one decision per call; the run goes on when all are answered."""

import pytest
from django.urls import reverse

from approvals.models import Decision, Run, ToolCall
from shop.models import OutgoingEmail, Refund
from tests.reviewing import advance, post, script_calls

pytestmark = pytest.mark.django_db


@pytest.fixture
def step(make_run, model):
    script_calls(
        model,
        ("issue_refund", {"order_id": "A-1001", "amount": 40, "reason": "Item arrived damaged"}),
        ("issue_refund", {"order_id": "A-1002", "amount": 35, "reason": "Missing item"}),
        ("send_email", {"to": "dana.smith@example.com", "subject": "Your refund", "body": "We refunded $40."}),
    )
    run = make_run("Refund A-1001 and A-1002 and tell Dana.")
    return run, list(run.tool_calls.order_by("call_id"))


def test_each_call_of_a_step_waits_for_its_own_decision(step):
    run, calls = step
    assert [c.status for c in calls] == [ToolCall.Status.PENDING] * 3
    assert len({c.arguments_hash for c in calls}) == 3
    assert run.status == Run.Status.WAITING


def test_the_run_goes_on_only_when_every_call_of_the_step_has_its_answer(step, client, reviewer, model):
    run, (first, second, email) = step
    client.force_login(reviewer)
    asked = len(model.requests())
    post(client, first, "approve")
    advance(first)
    assert first.status == ToolCall.Status.EXECUTED
    post(client, second, "reject", reason="Not ours to refund")
    advance(second)
    run.refresh_from_db()
    assert run.status == Run.Status.WAITING
    assert len(model.requests()) == asked
    post(client, email, "approve")
    advance(email)
    assert len(model.requests()) == asked + 1
    outputs = [m for m in model.requests()[-1]["messages"] if m["role"] == "tool"]
    assert sorted(m["tool_call_id"] for m in outputs) == ["call_1", "call_2", "call_3"]


def test_a_decision_carrying_another_calls_hash_is_refused(step, client, reviewer):
    run, (first, second, email) = step
    client.force_login(reviewer)
    response = post(client, first, "approve", arguments_hash=second.arguments_hash)
    assert response.status_code == 409
    assert "changed since you opened it" in response.content.decode()
    assert not Decision.objects.exists()


def test_approve_selected_records_one_decision_per_call(step, client, reviewer):
    run, (first, second, email) = step
    client.force_login(reviewer)
    response = client.post(
        reverse("approvals:approve_selected"),
        {
            "calls": [f"{first.pk}:{first.arguments_hash}", f"{email.pk}:{email.arguments_hash}"],
        },
        follow=True,
    )
    assert f"Approved 2 calls: #{first.pk}, #{email.pk}" in response.content.decode()
    decisions = Decision.objects.order_by("tool_call_id")
    assert [(d.tool_call_id, d.reviewer, d.arguments_hash) for d in decisions] == [
        (first.pk, reviewer, first.arguments_hash),
        (email.pk, reviewer, email.arguments_hash),
    ]
    second.refresh_from_db()
    assert second.status == ToolCall.Status.PENDING
    advance(first)
    assert Refund.objects.count() == 1 and OutgoingEmail.objects.count() == 1


def test_approve_selected_refuses_each_call_it_may_not_approve_and_says_why(step, client, reviewer, requester):
    run, (first, second, email) = step
    client.force_login(reviewer)
    response = client.post(
        reverse("approvals:approve_selected"),
        {
            "calls": [f"{first.pk}:{second.arguments_hash}", f"{second.pk}:{second.arguments_hash}"],
        },
        follow=True,
    )
    html = response.content.decode()
    assert f"#{first.pk} was not approved: This call changed since you opened it" in html
    assert f"Approved 1 call: #{second.pk}" in html
    client.force_login(requester)
    html = client.post(
        reverse("approvals:approve_selected"),
        {"calls": [f"{email.pk}:{email.arguments_hash}"]},
        follow=True,
    ).content.decode()
    assert "You requested this run, so you cannot decide its calls." in html
    assert list(Decision.objects.values_list("tool_call_id", flat=True)) == [second.pk]


def test_a_group_of_similar_calls_offers_a_checkbox_per_call_the_reviewer_may_decide(step, client, reviewer, requester):
    run, calls = step
    group = {"tool": "issue_refund", "agent": "support", "band": "under-50"}
    client.force_login(reviewer)
    assert "2 issue_refund calls under $50 from the support agent" in client.get(reverse("approvals:queue")).text
    html = client.get(reverse("approvals:queue_group"), group).content.decode()
    for call in calls[:2]:
        assert f'value="{call.pk}:{call.arguments_hash}" checked' in html
    client.force_login(requester)
    assert 'name="calls"' not in client.get(reverse("approvals:queue_group"), group).content.decode()
