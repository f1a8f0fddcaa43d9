"""The right people: groups decide the tools and rules they are named for, on every
action the server takes; the requester never decides their own run's calls."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from approvals import services
from approvals.models import Decision, ToolCall, ToolSetting
from shop.models import Refund
from tests.reviewing import advance, call_url, pending_call, post, senior_rule

pytestmark = pytest.mark.django_db

REFUND_600 = "Order A-1004 was never delivered. Please refund $600."


@pytest.fixture
def big_refund(make_run):
    senior_rule()
    return pending_call(make_run, REFUND_600)


def test_a_600_refund_is_held_for_the_senior_group(big_refund):
    assert big_refund.review_group.name == "senior"
    assert big_refund.policy["group_name"] == "senior"


def test_a_reviewer_outside_senior_does_not_see_a_600_refund(big_refund, client, reviewer):
    client.force_login(reviewer)
    assert big_refund.description not in client.get(reverse("approvals:queue")).content.decode()
    assert client.get(call_url(big_refund)).status_code == 404


def test_a_reviewer_outside_senior_posting_a_decision_on_a_600_refund_directly_is_refused(big_refund, client, reviewer):
    client.force_login(reviewer)
    for action, data in [
        ("approve", {}),
        ("edit", {"arg_order_id": "A-1004", "arg_amount": "600", "arg_reason": "x"}),
        ("reject", {"reason": "no"}),
    ]:
        assert post(client, big_refund, action, **data).status_code == 404
    with pytest.raises(services.NotAllowed, match="Only members of the group “senior” may decide this call"):
        services.toolcall_decide(
            call_id=big_refund.pk, reviewer=reviewer, verdict="approve", shown_hash=big_refund.arguments_hash
        )
    big_refund.refresh_from_db()
    assert big_refund.status == ToolCall.Status.PENDING
    assert not Decision.objects.exists()


def test_a_senior_reviewer_decides_a_600_refund(big_refund, client, senior):
    client.force_login(senior)
    assert big_refund.description in client.get(reverse("approvals:queue")).content.decode()
    assert post(client, big_refund, "approve").status_code == 302
    assert advance(big_refund).status == ToolCall.Status.EXECUTED
    assert Refund.objects.get().amount == 600


def test_an_edit_that_raises_a_refund_above_500_needs_a_senior_reviewer(make_run, client, reviewer, senior):
    senior_rule()
    call = pending_call(make_run, "Order A-1004 arrived broken. Please refund $400.")
    assert call.review_group is None
    client.force_login(reviewer)
    response = post(client, call, "edit", arg_order_id="A-1004", arg_amount="600", arg_reason="Broken")
    assert response.status_code == 403
    assert "Only members of the group “senior” may approve this" in response.content.decode()
    assert not Decision.objects.exists()
    client.force_login(senior)
    assert post(client, call, "edit", arg_order_id="A-1004", arg_amount="600", arg_reason="Broken").status_code == 302
    call.refresh_from_db()
    assert call.review_group.name == "senior"
    assert advance(call).status == ToolCall.Status.EXECUTED


def test_a_tool_can_be_reserved_to_a_group(make_run, client, reviewer, senior):
    ToolSetting.objects.create(tool_name="send_email", group=Group.objects.get(name="senior"))
    call = pending_call(make_run, "Email Dana that her replacement has shipped.")
    assert call.review_group.name == "senior"
    client.force_login(reviewer)
    assert client.get(call_url(call)).status_code == 404
    client.force_login(senior)
    assert client.get(call_url(call)).status_code == 200


def test_the_requester_cannot_approve_their_own_runs_calls(make_run, client, requester):
    call = pending_call(make_run)
    client.force_login(requester)
    html = client.get(call_url(call)).content.decode()
    assert "You requested this run, so you cannot decide its calls." in html
    assert '/approve/"' not in html
    response = post(client, call, "approve")
    assert response.status_code == 403
    assert "You requested this run, so you cannot decide its calls." in response.content.decode()
    assert not Decision.objects.exists()
    with pytest.raises(services.NotAllowed, match="You requested this run"):
        services.toolcall_decide(call_id=call.pk, reviewer=requester, verdict="approve", shown_hash=call.arguments_hash)


def test_the_requester_gets_a_403_from_htmx(make_run, client, requester):
    call = pending_call(make_run)
    client.force_login(requester)
    response = post(client, call, "approve", htmx=True)
    assert response.status_code == 403
    assert "You requested this run" in response.content.decode()


def test_someone_who_is_not_a_reviewer_sees_and_decides_nothing(make_run, client, outsider):
    call = pending_call(make_run)
    client.force_login(outsider)
    assert client.get(call_url(call)).status_code == 404
    assert post(client, call, "approve").status_code == 404
    assert not Decision.objects.exists()


def test_deciding_needs_a_login(make_run, client):
    call = pending_call(make_run)
    response = post(client, call, "approve")
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not Decision.objects.exists()
