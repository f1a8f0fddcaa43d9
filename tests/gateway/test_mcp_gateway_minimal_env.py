"""The stdio gateway started as an MCP client starts it, from a JSON configuration like a real client's: the SDK's
stdio client passes a minimal environment and no working directory of ours, so the gateway reads its settings
from the file named by --env-file (or REVIEWHUB_ENV_FILE), and what it lacks reaches the client as an MCP error
and stderr, never only a closed connection."""

import asyncio
import json
import sys

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from .mcpgateway import ROOT, McpClient, gateway_env, shop_gateway

pytestmark = pytest.mark.django_db(transaction=True)


def _client_config(tmp_path, *, args: list[str], env: dict | None = None) -> StdioServerParameters:
    """The server entry of a client's JSON configuration, read back as the client reads it; started elsewhere."""
    entry = {"command": sys.executable, "args": [str(ROOT / "manage.py"), "mcp_gateway", *args]}
    if env:
        entry["env"] = env
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"reviewhub": entry}}))
    read = json.loads(path.read_text())["mcpServers"]["reviewhub"]
    return StdioServerParameters(**read, cwd=str(tmp_path))


def _env_file(tmp_path, values: dict) -> str:
    path = tmp_path / "reviewhub.env"
    path.write_text("# ReviewHub's settings for the stdio gateway\n" + "".join(f"{k}={v}\n" for k, v in values.items()))
    return str(path)


def _initialize_error(server: StdioServerParameters, tmp_path) -> tuple[str, str]:
    """(the MCP error the client gets on initialize, what the gateway said on stderr)."""
    errlog = tmp_path / "stderr.txt"

    async def initialize() -> str:
        with errlog.open("w") as stderr:
            async with stdio_client(server, errlog=stderr) as (read, write), ClientSession(read, write) as session:
                try:
                    await asyncio.wait_for(session.initialize(), 60)
                except MCPError as exc:
                    return str(exc)
        return ""

    message = asyncio.run(initialize())
    return message, errlog.read_text()


def test_a_client_with_a_minimal_environment_reaches_the_gateway_through_its_settings_file(tmp_path):
    shop_gateway("minigw")
    settings_file = _env_file(tmp_path, gateway_env(tmp_path))
    server = _client_config(tmp_path, args=["minigw", "--env-file", settings_file])

    with McpClient(server) as mcp:
        names = {tool.name for tool in mcp.list_tools()}
        result = mcp.call_tool("lookup_order", {"order_id": "A-1001"})

    assert names == {"lookup_order", "get_balance", "refund"}
    assert "ana@example.com" in result.content[0].text


def test_the_settings_file_may_be_named_by_one_variable_and_a_missing_setting_is_said_to_the_client(tmp_path):
    env = gateway_env(tmp_path) | {"DJANGO_SETTINGS_MODULE": "reviewhub.settings"}  # production settings, no key
    server = _client_config(tmp_path, args=["minigw"], env={"REVIEWHUB_ENV_FILE": _env_file(tmp_path, env)})

    message, stderr = _initialize_error(server, tmp_path)

    assert "could not start" in message and "SECRET_KEY is not set" in message
    assert "SECRET_KEY is not set" in stderr


def test_a_missing_settings_file_and_an_unreachable_database_are_said_to_the_client(tmp_path):
    missing = _client_config(tmp_path, args=["minigw", "--env-file", str(tmp_path / "nowhere.env")])
    env = gateway_env(tmp_path) | {"DATABASE_URL": "postgres://nobody@127.0.0.1:9/none"}
    unreachable = _client_config(tmp_path, args=["minigw", "--env-file", _env_file(tmp_path, env)])

    no_file, _ = _initialize_error(missing, tmp_path)
    no_database, stderr = _initialize_error(unreachable, tmp_path)

    assert "nowhere.env" in no_file and "cannot be read" in no_file
    assert "cannot reach DATABASE_URL" in no_database and "cannot reach DATABASE_URL" in stderr


def test_a_gateway_name_nobody_added_is_said_to_the_client(tmp_path):
    server = _client_config(tmp_path, args=["nosuchgw", "--env-file", _env_file(tmp_path, gateway_env(tmp_path))])

    message, _ = _initialize_error(server, tmp_path)

    assert "no MCP gateway named 'nosuchgw'" in message
