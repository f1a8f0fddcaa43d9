import sys

import pytest
from mcp.client.stdio import StdioServerParameters

from remote.tokens import token_create
from tests.stack import Processes, free_port, wait_for_http

from .mcpgateway import ROOT, SHOP_SERVER, gateway_env, shop_gateway


@pytest.fixture
def gateway():
    """The gateway `shopgw` in front of the example shop (mcpgateway.py); `stdio` runs it."""
    return shop_gateway("shopgw")


@pytest.fixture
def stdio(gateway, tmp_path):
    """The gateway's command as an MCP client starts it (with the tests' database and the shop's file)."""
    env = gateway_env(tmp_path)
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_gateway", gateway.name], env=env, cwd=str(ROOT)
    )


@pytest.fixture
def served(tmp_path):
    """The shop on its own port and ReviewHub's ASGI application (uvicorn) with the gateway `shophttp` before it:
    (the gateway's MCP URL, a token of its agent)."""
    processes = Processes(gateway_env(tmp_path))
    shop_port, port = free_port(), free_port()
    shop = processes.start(str(SHOP_SERVER), "--http", "--port", str(shop_port), log_name="mcp-shop-http")
    web = processes.start("-m", "uvicorn", "reviewhub.asgi:application", "--port", str(port), log_name="mcp-web")
    try:
        wait_for_http(f"http://127.0.0.1:{shop_port}/mcp", process=shop)
        wait_for_http(f"http://127.0.0.1:{port}/mcp/", process=web)
        gateway = shop_gateway("shophttp", url=f"http://127.0.0.1:{shop_port}/mcp")
        _, token = token_create(agent=gateway.agent)
        yield f"http://127.0.0.1:{port}/mcp/shophttp/", token
    finally:
        processes.stop()
