"""N-of-M: a call that needs two approvals runs only after two different reviewers
approve it, once; one reject ends it."""

import pytest

from approvals import services
from approvals.models import Decision, PolicyRule, ToolCall
from shop.models import Refund
from tests.reviewing import advance, call_url, post

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _two_approvals_over_30(db):
    PolicyRule.objects.create(
        name="Refunds over $30 need two approvals",
        tool_name="issue_refund",
        field="amount",
        operator=">",
        value=30,
        outcome="review",
        required_approvals=2,
        order=5,
    )


def test_the_rule_asks_for_two_approvals(call):
    assert call.required_approvals == 2


def test_the_same_reviewer_approving_twice_is_refused(call, client, reviewer):
    client.force_login(reviewer)
    assert post(client, call, "approve").status_code == 302
    response = post(client, call, "approve")
    assert response.status_code == 403
    assert "You already approved this call; it needs the approval of another reviewer." in response.content.decode()
    with pytest.raises(services.NotAllowed):
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    call = advance(call)
    assert call.status == ToolCall.Status.PENDING
    assert Decision.objects.count() == 1
    assert not Refund.objects.exists()


def test_one_approval_leaves_the_call_waiting_and_says_so(call, client, reviewer, reviewer2):
    client.force_login(reviewer)
    post(client, call, "approve")
    decision = Decision.objects.get()
    assert decision.final is False
    client.force_login(reviewer2)
    html = client.get(call_url(call)).content.decode()
    assert "1 of 2 approvals: alice" in html
    assert '/approve/"' in html


def test_two_different_reviewers_approving_run_it_once(call, client, reviewer, reviewer2, model):
    client.force_login(reviewer)
    post(client, call, "approve")
    client.force_login(reviewer2)
    assert post(client, call, "approve").status_code == 302
    assert [d.final for d in Decision.objects.order_by("id")] == [False, True]
    call = advance(call)
    assert call.status == ToolCall.Status.EXECUTED
    advance(call)
    assert Refund.objects.count() == 1
    assert call.final_decision().reviewer == reviewer2


def test_a_third_approval_after_the_second_is_already_decided(call, client, reviewer, reviewer2, django_user_model):
    from django.contrib.auth.models import Group

    carol = django_user_model.objects.create_user(username="carol", password="pw")
    carol.groups.add(Group.objects.get(name="reviewers"))
    for user in (reviewer, reviewer2):
        client.force_login(user)
        post(client, call, "approve")
    client.force_login(carol)
    response = post(client, call, "approve")
    assert response.status_code == 409
    assert "Already approved by bob" in response.content.decode()


def test_one_reject_ends_it(call, client, reviewer, reviewer2):
    client.force_login(reviewer)
    post(client, call, "approve")
    client.force_login(reviewer2)
    post(client, call, "reject", reason="Not without a photo of the damage")
    call = advance(call)
    assert call.status == ToolCall.Status.REJECTED
    assert call.output == "Rejected by reviewer: Not without a photo of the damage"
    assert not Refund.objects.exists()


def test_an_edit_asks_the_others_to_approve_the_edited_arguments(call, client, reviewer, reviewer2):
    client.force_login(reviewer)
    post(client, call, "edit", arg_order_id="A-1001", arg_amount="35", arg_reason="Item arrived damaged")
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert call.review_arguments["amount"] == 35
    client.force_login(reviewer2)
    # A page opened before the edit carries the old hash: refused, not applied to other arguments.
    assert post(client, call, "approve", arguments_hash=call.arguments_hash).status_code == 409
    assert post(client, call, "approve").status_code == 302
    call = advance(call)
    assert call.status == ToolCall.Status.EXECUTED
    assert Refund.objects.get().amount == 35
