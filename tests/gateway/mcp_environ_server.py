"""An MCP server (stdio) that reports its own process's environment, as /proc/self/environ has it: an upstream
of the gateway in tests/gateway/test_mcp_gateway_environment.py."""

import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("environ")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def environment() -> str:
    """This process's environment, as JSON."""
    entries = Path("/proc/self/environ").read_bytes().split(b"\0")
    return json.dumps(dict(entry.decode().partition("=")[::2] for entry in entries if entry))


if __name__ == "__main__":
    server.run()
