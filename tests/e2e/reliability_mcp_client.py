"""An MCP client process for the reliability harness, as a user's client is: the SDK's Client starting the stdio
gateway (`manage.py mcp_gateway NAME`) with the environment in a JSON file, calling one tool once.

    python tests/e2e/reliability_mcp_client.py SERVER_JSON TOOL ARGUMENTS_JSON

SERVER_JSON holds StdioServerParameters' fields. It prints one JSON line: {"is_error", "text"} of the result, or
{"failed": why} when the gateway went away.
"""

import asyncio
import json
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def call(server: StdioServerParameters, tool: str, arguments: dict) -> dict:
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return {"is_error": bool(result.is_error), "text": text}


def main() -> None:
    server = StdioServerParameters(**json.loads(Path(sys.argv[1]).read_text()))
    try:
        said = asyncio.run(call(server, sys.argv[2], json.loads(sys.argv[3])))
    except Exception as exc:  # the gateway was killed under it
        said = {"failed": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(said), flush=True)


if __name__ == "__main__":
    main()
