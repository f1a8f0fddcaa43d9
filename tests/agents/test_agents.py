"""Agents declare their tools: a run's model is offered only its agent's, and the gate knows no other."""

import json
from dataclasses import replace

import pytest
from django.core import checks

from agents import loop, services
from agents.agents import Agent
from agents.agents import registry as agents
from approvals import services as records
from approvals.models import Message, Run, ToolCall
from approvals.tools import registry as tools
from shop.models import Refund
from tests.reviewing import propose

pytestmark = pytest.mark.django_db


def start(agent: str, text: str, requester) -> Run:
    run = services.run_start(agent_name=agent, request=text, requested_by=requester)
    loop.advance(run.pk)
    run.refresh_from_db()
    return run


def offered(request: dict) -> set[str]:
    return {spec["function"]["name"] for spec in request.get("tools") or []}


def test_each_agents_model_is_offered_only_that_agents_tools(shop, requester, model):
    start("orders", "Check the status of order A-1003.", requester)
    start("support", "Check the status of order A-1003.", requester)
    orders, support = model.requests()[0], model.requests()[2]
    assert offered(orders) == {"lookup_customer", "get_order_status"}
    assert offered(support) == {
        "lookup_customer",
        "get_order_status",
        "choose_order",
        "add_order_note",
        "issue_refund",
        "send_email",
    }


def test_the_two_shop_agents_run_side_by_side_each_with_its_own_tools(shop, requester, model):
    orders = start("orders", "Check the status of order A-1003.", requester)
    support = start("support", "Refund $7.50 on order A-1003.", requester)
    assert orders.tool_calls.get().status == ToolCall.Status.EXECUTED
    assert support.tool_calls.get(tool_name="issue_refund").status == ToolCall.Status.EXECUTED  # $20 or less
    assert orders.status == Run.Status.COMPLETED
    # Only the support agent's answer waits for a person, as a draft reply to the customer (its checkpoint).
    assert support.status == Run.Status.WAITING
    assert support.tool_calls.get(status=ToolCall.Status.PENDING).tool_name == "reply_to_customer"
    assert Refund.objects.count() == 1


def test_a_run_of_one_agent_cannot_call_the_other_agents_tool(shop, requester, model):
    run = start("orders", "Refund $7.50 on order A-1003.", requester)
    call = run.tool_calls.get(tool_name="issue_refund")
    assert call.status == ToolCall.Status.INVALID
    assert "there is no tool named 'issue_refund'. Available tools: lookup_customer, get_order_status." in call.output
    assert not Refund.objects.exists()
    assert run.status == Run.Status.COMPLETED  # the model read the answer and stopped


def test_a_run_of_an_agent_nobody_declared_may_call_no_tool(shop, requester):
    run = Run.objects.create(agent="stranger", request="Help.", requested_by=requester)
    records.message_append(run=run, role=Message.Role.USER, content=run.request)
    call = propose(run, "get_order_status", {"order_id": "A-1001"})
    assert call.status == ToolCall.Status.INVALID
    assert "there is no tool named 'get_order_status'" in call.output


def test_an_agent_that_names_a_tool_nobody_registered_fails_the_system_checks(monkeypatch):
    monkeypatch.setattr(agents, "_agents", dict(agents._agents))
    monkeypatch.setattr(tools, "_allowed", dict(tools._allowed))
    agents.register(Agent(name="typo", title="Typo", system_prompt="", tools=("get_order_stauts",)))
    errors = [e for e in checks.run_checks() if e.id == "agents.E002"]
    assert [e.msg for e in errors] == ["Agent 'typo' declares the tool 'get_order_stauts', which no app registers."]


def test_a_tool_declared_for_no_agent_is_offered_to_none(shop, requester, model, monkeypatch):
    monkeypatch.setattr(tools, "_tools", dict(tools._tools))
    tools.register(replace(tools.get("get_order_status"), name="spare_lookup"))
    start("support", "Check the status of order A-1003.", requester)
    assert "spare_lookup" not in json.dumps(model.requests()[0]["tools"])
