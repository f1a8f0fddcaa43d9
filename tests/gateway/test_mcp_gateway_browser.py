"""The MCP gateway's refund reviewed in a real browser: the reviewer edits it on the call's page, the client's
waiting tools/call (streamable HTTP) returns the upstream's answer for the edited amount, run once."""

import pytest

from tests.livestack import browser_login

from .mcpgateway import McpClient, http_transport, refunds
from .test_mcp_gateway import REFUND, pending_call

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_edits_a_gateway_refund_in_the_browser_and_the_upstream_sees_the_edit_once(
    served,
    reviewer,
    browser,
    tmp_path,
):
    from playwright.sync_api import expect

    url, token = served
    base = url.split("/mcp/")[0]
    page = browser.new_page()
    page.set_default_timeout(15000)
    browser_login(page, base + "/login/", "alice", "pw-alice")
    with McpClient(http_transport(url, token)) as mcp:
        answer = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        page.goto(f"{base}/calls/{call.pk}/")
        expect(page.locator("body")).to_contain_text("Refund $490 on order A-1001")
        expect(page.locator("body")).to_contain_text("refundable $49.00")
        page.get_by_role("link", name="Edit…").first.click()
        page.locator("input[name=arg_amount]").fill("49")
        page.get_by_role("button", name="Approve with these arguments").click()
        expect(page.locator(".outcome")).to_contain_text("Edited and approved by alice")
        result = answer.result(60)

    assert [block.text for block in result.content][1] == "Refunded $49.00 on order A-1001."
    assert refunds(tmp_path) == [("A-1001", 49.0)]
