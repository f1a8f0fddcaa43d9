"""Connections to a gateway's upstream MCP servers, with the SDK's own client: opened once per gateway process
and kept open (a read-only call then costs one round trip), a command over stdio or a URL over streamable HTTP."""

import logging
import os
import shlex
from contextlib import AsyncExitStack
from dataclasses import dataclass

import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpstreamSpec:
    pk: int
    name: str
    command: str
    url: str


def client_for(spec: UpstreamSpec) -> Client:
    if spec.command:
        command, *args = shlex.split(spec.command)
        # The upstream inherits the gateway's environment (its database path, its own credentials).
        return Client(StdioServerParameters(command=command, args=args, env=dict(os.environ)))
    return Client(spec.url)


class Upstreams:
    """`async with Upstreams(specs) as upstreams:` each reachable upstream's client, by name."""

    def __init__(self, specs: list[UpstreamSpec]):
        self.specs = specs
        self.clients: dict[str, Client] = {}
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> "Upstreams":
        await self._stack.__aenter__()
        for spec in self.specs:
            try:
                self.clients[spec.name] = await self._stack.enter_async_context(client_for(spec))
            except Exception as exc:  # one broken upstream must not take the others down; its tools are not listed
                log.warning("MCP upstream %s is not reachable: %s", spec.name, exc)
        return self

    async def __aexit__(self, *exc) -> None:
        await self._stack.__aexit__(*exc)

    async def listings(self) -> dict[int, list[dict]]:
        """Each reachable upstream's tools (as JSON), by the upstream's pk."""
        found = {}
        for spec in self.specs:
            client = self.clients.get(spec.name)
            if client is None:
                continue
            try:
                listed = await client.list_tools()
            except Exception as exc:
                log.warning("MCP upstream %s did not list its tools: %s", spec.name, exc)
                continue
            found[spec.pk] = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
        return found

    async def call(self, upstream: str, tool: str, arguments: dict) -> types.CallToolResult:
        client = self.clients.get(upstream)
        if client is None:
            return error_result(f"The server behind {tool} is not reachable; nothing was done.")
        try:
            return await client.call_tool(tool, arguments)
        except Exception as exc:  # the upstream went away or answered nonsense: the client gets a tool error
            log.warning("MCP upstream %s failed on %s: %s", upstream, tool, exc)
            return error_result(f"The server behind {tool} failed: {exc}")


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
