"""The MCP gateway over stdio, driven by the SDK's own client: `manage.py mcp_gateway NAME` in front of the example
shop (examples/mcp_shop_server.py), its refunds reviewed in ReviewHub's queue and executed once."""

import getpass
import os
import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import ToolCall
from approvals.services import leases
from gateway import services as gateway_services
from tests.reviewing import decide
from tests.waiting import wait_for

from .mcpgateway import McpClient, refunds, shop_processes

pytestmark = pytest.mark.django_db(transaction=True)

REFUND = {"order_id": "A-1001", "amount": 490, "reason": "arrived broken"}


def pending_call() -> ToolCall:
    assert wait_for(lambda: ToolCall.objects.filter(status=ToolCall.Status.PENDING).exists(), timeout=30)
    return ToolCall.objects.get(status=ToolCall.Status.PENDING)


def test_the_gateway_lists_the_upstreams_tools_with_their_own_schemas_and_never_a_forbidden_one(stdio):
    with McpClient(stdio) as mcp:
        tools = {tool.name: tool for tool in mcp.list_tools()}

    assert set(tools) == {"lookup_order", "get_balance", "refund"}
    assert tools["refund"].description == "Refund money to the customer of an order."
    assert tools["refund"].input_schema["required"] == ["order_id", "amount"]
    assert tools["lookup_order"].annotations.read_only_hint is True


def test_a_read_only_call_passes_straight_through_without_a_review(stdio):
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("lookup_order", {"order_id": "A-1001"})

    assert not result.is_error
    assert "ana@example.com" in result.content[0].text
    assert not ToolCall.objects.exists()


def test_a_refund_waits_for_review_and_the_upstream_sees_the_reviewers_edit_once(stdio, reviewer, tmp_path):
    with McpClient(stdio) as mcp:
        answer = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        assert refunds(tmp_path) == []
        decide(call, reviewer, "edit", arguments=REFUND | {"amount": 49})
        result = answer.result(60)

    assert not result.is_error
    texts = [block.text for block in result.content]
    assert texts[0] == "A reviewer changed the arguments before this ran: amount: 490 → 49."
    assert texts[1] == "Refunded $49.00 on order A-1001."
    assert refunds(tmp_path) == [("A-1001", 49.0)]
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED


def test_a_waiting_call_shows_reviewers_the_template_the_upstreams_facts_and_who_asked(stdio, reviewer):
    with McpClient(stdio) as mcp:
        answer = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        decide(call, reviewer, "reject", reason="not now")
        answer.result(60)

    assert call.description == "Refund $490 on order A-1001"
    assert call.agent_facts["get_balance"] == "Order A-1001: total $49.00, refundable $49.00."
    assert call.agent_facts["client"].startswith("mcp")
    assert "through the MCP gateway shopgw" in call.message.content


def test_the_card_names_the_user_the_client_reports_and_never_the_gateways_os_user(stdio, reviewer):
    with McpClient(stdio) as mcp:
        reported = mcp.call_tool_later("refund", REFUND, meta={"reviewhub/user": "dana@support.example"})
        first = pending_call()
        decide(first, reviewer, "reject", reason="not now")
        reported.result(60)
        unsaid = mcp.call_tool_later("refund", REFUND | {"amount": 5})
        second = pending_call()
        decide(second, reviewer, "reject", reason="not now")
        unsaid.result(60)

    assert first.agent_facts["user"] == "dana@support.example"
    assert "(user: dana@support.example)" in first.message.content
    assert second.agent_facts["user"] == "not said by the client"
    assert getpass.getuser() not in (second.agent_facts["user"], second.message.content)


def test_the_client_hears_progress_while_its_call_waits(stdio, reviewer):
    with McpClient(stdio) as mcp:
        answer = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        assert wait_for(lambda: len(mcp.progress) >= 2, timeout=30)
        decide(call, reviewer, "approve")
        answer.result(60)

    assert mcp.progress[0].startswith("Waiting for a reviewer")


def test_a_rejection_answers_a_tool_error_with_the_reviewers_reason(stdio, reviewer, tmp_path):
    with McpClient(stdio) as mcp:
        answer = mcp.call_tool_later("refund", REFUND)
        decide(pending_call(), reviewer, "reject", reason="the order total is $49")
        result = answer.result(60)

    assert result.is_error
    assert result.content[0].text == "A reviewer rejected this call: the order total is $49. Nothing was done."
    assert refunds(tmp_path) == []


def test_a_call_waiting_too_long_answers_that_it_still_waits_and_a_retry_finds_the_same_call(
    stdio, gateway, reviewer, tmp_path
):
    gateway.answer_after_seconds = 1
    gateway.save()
    with McpClient(stdio) as mcp:
        first = mcp.call_tool("refund", REFUND)
        call = pending_call()
        retry = mcp.call_tool_later("refund", REFUND)
        decide(call, reviewer, "approve")
        result = retry.result(60)
        later = mcp.call_tool("refund", REFUND)  # the same request once its outcome was had: a new call

    assert first.is_error and f"still waiting for a reviewer (call {call.pk}" in first.content[0].text
    assert not result.is_error and result.content[0].text == "Refunded $490.00 on order A-1001."
    assert refunds(tmp_path) == [("A-1001", 490.0)]
    assert ToolCall.objects.count() == 2 and later.is_error and "still waiting" in later.content[0].text


def test_an_approved_call_runs_once_though_the_gateway_restarted_while_it_waited(stdio, reviewer, tmp_path):
    with McpClient(stdio) as mcp:
        mcp.call_tool_later("refund", REFUND)
        call = pending_call()
    decide(call, reviewer, "approve")  # nobody waits now: the gateway that proposed it is gone
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("refund", REFUND)

    assert not result.is_error and result.content[0].text == "Refunded $490.00 on order A-1001."
    assert ToolCall.objects.count() == 1
    assert refunds(tmp_path) == [("A-1001", 490.0)]


def test_an_upstream_whose_process_died_is_started_again_for_the_next_call(stdio, tmp_path):
    with McpClient(stdio) as mcp:
        before = mcp.call_tool("lookup_order", {"order_id": "A-1002"})
        dead = shop_processes(tmp_path)
        for pid in dead:
            os.kill(pid, signal.SIGKILL)
        assert dead and wait_for(lambda: not set(dead) & set(shop_processes(tmp_path)), timeout=30)
        after = mcp.call_tool("lookup_order", {"order_id": "A-1002"})

    assert not before.is_error
    assert not after.is_error, after.content[0].text
    assert after.content[0].text == "Order A-1002: ben@example.com, total $120.00, shipped."


def _outcome_unknown(gateway, stdio, reviewer) -> ToolCall:
    """An approved call a gateway claimed and then died on: its lease lapsed, so nobody knows whether it ran."""
    with McpClient(stdio) as mcp:
        mcp.call_tool_later("refund", REFUND)
        call = pending_call()
    decide(call, reviewer, "approve")
    assert gateway_services.call_claim(gateway=gateway, call_id=call.pk)
    assert leases.leases_lapse(now=timezone.now() + timedelta(hours=1))["unknown"] == 1
    return call


def test_a_call_a_reviewer_settled_as_run_answers_the_reviewers_output_and_is_never_run(
    gateway, stdio, reviewer, tmp_path
):
    call = _outcome_unknown(gateway, stdio, reviewer)
    services.toolcall_settle(call_id=call.pk, reviewer=reviewer, answer="ran", output="Refunded $490 (bank)")
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("refund", REFUND)

    assert not result.is_error
    assert [block.text for block in result.content] == [
        "A reviewer recorded what this call did (its result never came back).",
        "Refunded $490 (bank)",
    ]
    assert refunds(tmp_path) == []
    assert ToolCall.objects.count() == 1


def test_a_call_a_reviewer_settled_as_failed_answers_a_tool_error_with_their_reason(gateway, stdio, reviewer, tmp_path):
    call = _outcome_unknown(gateway, stdio, reviewer)
    services.toolcall_settle(call_id=call.pk, reviewer=reviewer, answer="fail", reason="the bank refused it")
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("refund", REFUND)

    assert result.is_error
    assert result.content[0].text == "Error: the bank refused it (settled by alice)"
    assert refunds(tmp_path) == []
