"""The MCP gateway configured in the admin, and its calls served in this process (the SDK's in-memory connection
to the gateway's server; the shop behind it over stdio): bad input refused, tools refreshed and declared, the
admin's settings honoured, the policy's rules applied to the gateway's calls."""

import pytest

from approvals.models import PolicyRule, ToolCall
from gateway.models import Upstream, UpstreamTool
from gateway.server import gateway_server
from remote.models import DeclaredTool

from .mcpgateway import McpClient, refunds
from .test_mcp_gateway import REFUND

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _shop_db_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_DB", str(tmp_path / "shop.sqlite3"))


def refresh(admin_client, gateway):
    data = {"action": "refresh", "_selected_action": [gateway.pk]}
    return admin_client.post("/admin/gateway/gateway/", data, follow=True)


def test_an_upstream_with_both_a_command_and_a_url_is_refused_naming_the_field(admin_client, gateway):
    data = {
        "gateway": gateway.pk,
        "name": "both",
        "command": "python server.py",
        "url": "http://127.0.0.1:9/mcp",
        "enabled": "on",
        "tools-TOTAL_FORMS": "0",
        "tools-INITIAL_FORMS": "0",
    }
    response = admin_client.post("/admin/gateway/upstream/add/", data)

    assert response.status_code == 200
    assert "Give either a command (stdio) or a URL (streamable HTTP), not both." in response.content.decode()
    assert not Upstream.objects.filter(name="both").exists()


def test_refreshing_in_the_admin_stores_the_upstreams_tools_and_declares_them_for_the_gateways_agent(
    admin_client, gateway
):
    response = refresh(admin_client, gateway)

    assert "1 of 1 upstream servers answered" in response.content.decode()
    declared = {tool.name: tool.tier for tool in DeclaredTool.objects.filter(agent=gateway.agent, current=True)}
    assert declared == {
        "lookup_order": "read_only",
        "get_balance": "read_only",
        "refund": "approval",
        "close_account": "forbidden",
    }
    refund = DeclaredTool.objects.get(agent=gateway.agent, name="refund")
    assert refund.description_template == "Refund ${amount} on order {order_id}"


def test_a_tier_set_in_the_admin_is_the_declared_tools_next_version(admin_client, gateway):
    refresh(admin_client, gateway)
    upstream = gateway.upstreams.get()
    tools = list(upstream.tools.order_by("pk"))
    data = {"gateway": gateway.pk, "name": "shop", "command": upstream.command, "url": "", "enabled": "on"}
    data |= {"tools-TOTAL_FORMS": str(len(tools)), "tools-INITIAL_FORMS": str(len(tools))}
    for i, tool in enumerate(tools):
        setting = "read_only" if tool.name == "refund" else tool.setting
        fields = {"id": tool.pk, "upstream": upstream.pk, "setting": setting}
        fields |= {"description_template": tool.description_template, "facts_tool": tool.facts_tool}
        data |= {f"tools-{i}-{name}": value for name, value in fields.items()}

    response = admin_client.post(f"/admin/gateway/upstream/{upstream.pk}/change/", data)

    assert response.status_code == 302
    refund = DeclaredTool.objects.get(agent=gateway.agent, name="refund", current=True)
    assert (refund.tier, refund.version) == ("read_only", 2)


def test_a_call_whose_arguments_fail_the_upstreams_schema_is_refused_naming_the_field(gateway):
    with McpClient(gateway_server(gateway.name)) as mcp:
        result = mcp.call_tool("refund", {"order_id": "A-1001", "amount": "a lot"})

    assert result.is_error
    assert result.content[0].text.startswith("arguments.amount: 'a lot' is not of type 'number'")
    assert not ToolCall.objects.exists()


def test_a_policy_rule_forbidding_big_refunds_applies_to_the_gateways_calls(gateway, tmp_path):
    PolicyRule.objects.create(
        name="No big refunds", tool_name="shopgw.refund", field="amount", operator=">", value=100, outcome="forbid"
    )
    with McpClient(gateway_server(gateway.name)) as mcp:
        result = mcp.call_tool("refund", REFUND)

    assert result.is_error and "Nothing was done." in result.content[0].text
    assert ToolCall.objects.get().status == ToolCall.Status.FORBIDDEN
    assert refunds(tmp_path) == []


def test_a_forbidden_tool_cannot_be_called_even_by_name(gateway):
    with McpClient(gateway_server(gateway.name)) as mcp:
        result = mcp.call_tool("close_account", {"customer": "ana@example.com"})

    assert result.is_error and result.content[0].text == "There is no tool named 'close_account'. Nothing was done."
    assert UpstreamTool.objects.get(name="close_account").setting == "forbidden"
