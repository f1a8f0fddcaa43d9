"""A reviewer's edit keeps whole numbers whole: 49 typed in a number field reaches the agent as the integer 49,
and neither the card nor the description says 49.0."""

import json

import pytest

from approvals.models import ToolCall
from remote.declared import render_template
from tests.agentapi import REFUND_TOOL
from tests.reviewing import call_url, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def remote_call(refund_agent, client, reviewer) -> ToolCall:
    client.force_login(reviewer)
    return ToolCall.objects.get(pk=refund_agent.propose()["id"])


def edit_amount(client, call: ToolCall, amount: str):
    return post(client, call, "edit", arg_order_id="A-1001", arg_amount=amount, arg_reason="arrived broken")


def test_an_edit_to_49_in_a_number_field_reaches_the_agent_as_the_integer_49(refund_agent, remote_call, client):
    edit_amount(client, remote_call, "49")

    decision = refund_agent.get(f"/calls/{remote_call.pk}").json()["decision"]

    assert decision["verdict"] == "edit"
    assert type(decision["arguments"]["amount"]) is int and decision["arguments"]["amount"] == 49
    assert decision["changes"] == [{"field": "amount", "before": 490, "after": 49}]


def test_the_edited_card_never_says_49_point_0(remote_call, client):
    edit_amount(client, remote_call, "49")
    remote_call.refresh_from_db()

    page = client.get(call_url(remote_call)).content.decode()

    assert "Refund $49 on order A-1001" in page
    assert "Refund $49.0" not in page and '"amount": 49.0' not in page
    assert remote_call.approved_arguments["amount"] == 49 and "49.0" not in json.dumps(remote_call.approved_arguments)


def test_a_description_shows_a_whole_float_as_the_integer_it_is():
    template = REFUND_TOOL["description_template"]

    assert render_template(template, {"order_id": "A-1001", "amount": 49.0}) == "Refund $49 on order A-1001"
    assert render_template(template, {"order_id": "A-1001", "amount": 49.5}) == "Refund $49.5 on order A-1001"
