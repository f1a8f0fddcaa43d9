"""The MCP gateway over streamable HTTP, mounted at /mcp/NAME/ in the ASGI application, in front of the example
shop served over streamable HTTP too; a reviewer edits the refund through the call panel's HTTP form."""

import json
import sys

import httpx
import pytest
from mcp.client.stdio import StdioServerParameters

from approvals.models import ToolCall
from remote import services as remote_services
from remote.tokens import token_create
from tests.reviewing import decide, post
from tests.waiting import wait_for

from .mcpgateway import ROOT, McpClient, gateway_env, http_transport, refunds
from .test_mcp_gateway import REFUND, pending_call

pytestmark = pytest.mark.django_db(transaction=True)


def test_over_http_a_request_without_a_token_of_the_gateways_agent_is_refused(served):
    url, _ = served
    other, _ = remote_services.agent_get_or_create(name="someone-else")
    _, other_token = token_create(agent=other)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    anonymous = httpx.post(url, json=ping)
    wrong = httpx.post(url, json=ping, headers={"Authorization": f"Bearer {other_token}"})

    assert anonymous.status_code == wrong.status_code == 401
    assert "Bearer" in anonymous.headers["www-authenticate"]


def test_over_http_the_tools_are_listed_and_a_read_only_call_passes_straight_through(served):
    url, token = served
    with McpClient(http_transport(url, token)) as mcp:
        names = {tool.name for tool in mcp.list_tools()}
        result = mcp.call_tool("lookup_order", {"order_id": "A-1002"})

    assert names == {"lookup_order", "get_balance", "refund"}
    assert result.content[0].text == "Order A-1002: ben@example.com, total $120.00, shipped."
    assert not ToolCall.objects.exists()


def test_over_http_a_refund_and_its_retry_wait_on_one_call_edited_in_the_reviewers_form_and_run_once(
    served, client, reviewer, tmp_path
):
    url, token = served
    client.force_login(reviewer)
    with McpClient(http_transport(url, token)) as mcp:
        first = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        retry_heard: list[str] = []
        retry = mcp.call_tool_later("refund", REFUND, heard=retry_heard)
        # A retry is one only while the first is unanswered: decide once the gateway waits on it too.
        assert wait_for(lambda: retry_heard, timeout=30)
        edited = json.dumps(REFUND | {"amount": 49})
        response = post(client, call, "edit", arguments_json=edited, reason="the order total is $49")
        results = [first.result(60), retry.result(60)]

    assert response.status_code in (200, 302)
    assert ToolCall.objects.count() == 1
    assert refunds(tmp_path) == [("A-1001", 49.0)]
    for result in results:
        assert [block.text for block in result.content] == [
            "A reviewer changed the arguments before this ran: amount: 490 → 49.",
            "Refunded $49.00 on order A-1001.",
        ]


def _initialize(url: str, token: str, **headers) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"} | headers
    return httpx.post(url, json=body, headers=headers)


def test_over_http_a_foreign_host_or_origin_is_refused_before_any_mcp_code_and_a_proper_request_initializes(served):
    url, token = served
    port = url.split(":")[2].split("/")[0]

    rebound = _initialize(url, token, Host="evil.example.com", Origin="http://evil.example.com")
    foreign_origin = _initialize(url, token, Origin="http://evil.example.com")
    other_port = _initialize(url, token, Origin="http://127.0.0.1:1")
    own_origin = _initialize(url, token, Origin=f"http://127.0.0.1:{port}")
    no_origin = _initialize(url, token)

    assert rebound.status_code == 400
    assert foreign_origin.status_code == other_port.status_code == 403
    assert own_origin.status_code == no_origin.status_code == 200
    assert "serverInfo" in own_origin.text and "reviewhub-shophttp" in no_origin.text


def test_the_same_call_over_stdio_and_http_is_one_pending_call_and_runs_once(served, tmp_path, reviewer):
    url, token = served
    stdio = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_gateway", "shophttp"], env=gateway_env(tmp_path), cwd=str(ROOT)
    )
    heard_http, heard_stdio = [], []
    with McpClient(http_transport(url, token)) as over_http, McpClient(stdio) as over_stdio:
        by_http = over_http.call_tool_later("refund", REFUND, heard_http)
        call = pending_call()
        by_stdio = over_stdio.call_tool_later("refund", REFUND, heard_stdio)
        assert wait_for(lambda: heard_stdio, timeout=30)  # the stdio gateway is waiting on a call
        assert ToolCall.objects.count() == 1
        decide(call, reviewer, "approve")
        results = [by_http.result(60), by_stdio.result(60)]

    assert ToolCall.objects.count() == 1
    assert refunds(tmp_path) == [("A-1001", 490.0)]
    assert [result.is_error for result in results] == [False, False]
