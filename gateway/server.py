"""The gateway as an MCP server (the SDK's low-level Server), for stdio and for streamable HTTP alike.

tools/list answers the upstreams' tools as the admin set them (forbidden ones never appear); tools/call runs a
read-only tool straight through to its upstream, and any other as a reviewed call (gateway/reviewed.py).
"""

import time
import uuid
from contextlib import asynccontextmanager
from functools import wraps

import mcp.types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server import Server

from approvals.models import Tier

from . import services
from .upstreams import Upstreams, error_result


def _fresh(fn):
    @wraps(fn)
    def call(**kwargs):
        close_old_connections()  # a gateway lives for days: never use a connection the database dropped
        return fn(**kwargs)

    return call


async def db(fn, **kwargs):
    """Run an ORM function of ours from the event loop."""
    return await sync_to_async(_fresh(fn))(**kwargs)


class Runtime:
    """One gateway in one process: its upstream connections and the tools it lists (re-read every few seconds)."""

    def __init__(self, gateway, upstreams: Upstreams):
        self.gateway = gateway
        self.upstreams = upstreams
        self._catalog: dict[str, services.Entry] = {}
        self._loaded = float("-inf")
        self.started = uuid.uuid4().hex[:12]  # names the thread of a client without a session of its own (stdio)

    async def sync(self) -> None:
        """Store what the upstreams list now, declared for the gateway's agent."""
        listings = await self.upstreams.listings()
        await db(services.tools_sync, gateway=self.gateway, listings=listings)
        self._loaded = float("-inf")

    async def catalog(self, *, fresh: bool = False) -> dict[str, services.Entry]:
        if fresh or time.monotonic() - self._loaded > settings.REVIEWHUB_MCP_CATALOG_SECONDS:
            self.gateway = await db(services.gateway_get, name=self.gateway.name)  # its settings as the admin has them
            self._catalog = await db(services.catalog, gateway=self.gateway)
            self._loaded = time.monotonic()
        return self._catalog


def _mcp_tool(entry: services.Entry) -> types.Tool:
    annotations = types.ToolAnnotations(**entry.annotations) if entry.annotations else None
    return types.Tool(
        name=entry.name, description=entry.description, input_schema=entry.input_schema, annotations=annotations
    )


async def _list_tools(ctx, params) -> types.ListToolsResult:
    entries = await ctx.lifespan_context.catalog(fresh=True)  # a listing always shows the admin's settings
    return types.ListToolsResult(tools=[_mcp_tool(entry) for entry in entries.values()])


async def _call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    from .reviewed import call_reviewed

    runtime: Runtime = ctx.lifespan_context
    entry = (await runtime.catalog()).get(params.name)
    if entry is None:
        return error_result(f"There is no tool named {params.name!r}. Nothing was done.")
    arguments = params.arguments or {}
    if entry.tier == Tier.READ_ONLY:
        return await runtime.upstreams.call(entry.upstream, entry.name, arguments, read_only=True)
    return await call_reviewed(ctx, runtime, entry, arguments)


def gateway_server(name: str) -> Server:
    """The MCP server of the gateway NAME: it opens its upstreams and lists their tools when it starts."""

    @asynccontextmanager
    async def lifespan(server):
        gateway = await db(services.gateway_get, name=name)
        specs = await db(services.upstream_specs, gateway=gateway)
        async with Upstreams(specs) as upstreams:
            runtime = Runtime(gateway, upstreams)
            await runtime.sync()
            yield runtime

    return Server(
        f"reviewhub-{name}",
        instructions="Tools behind ReviewHub: calls that change things wait for a person's review.",
        lifespan=lifespan,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )
