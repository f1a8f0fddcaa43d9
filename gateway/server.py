"""The gateway as an MCP server (the SDK's low-level Server), for stdio and for streamable HTTP alike.

tools/list answers the upstreams' tools as the admin set them (forbidden ones never appear); tools/call runs a
read-only tool straight through to its upstream, and any other as a reviewed call (gateway/reviewed.py).
"""

from contextlib import asynccontextmanager

import mcp.types as types
from mcp.server import Server

from approvals.models import Tier

from . import services
from .polling import serve_tasks
from .reviewed import call_reviewed
from .runtime import Runtime, db
from .upstreams import Upstreams, error_result


def _mcp_tool(entry: services.Entry) -> types.Tool:
    annotations = types.ToolAnnotations(**entry.annotations) if entry.annotations else None
    return types.Tool(
        name=entry.name, description=entry.description, input_schema=entry.input_schema, annotations=annotations
    )


async def _list_tools(ctx, params) -> types.ListToolsResult:
    entries = await ctx.lifespan_context.catalog(fresh=True)  # a listing always shows the admin's settings
    return types.ListToolsResult(tools=[_mcp_tool(entry) for entry in entries.values()])


async def _call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult | dict:
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

    server = Server(
        f"reviewhub-{name}",
        instructions="Tools behind ReviewHub: calls that change things wait for a person's review.",
        lifespan=lifespan,
        on_list_tools=_list_tools,
    )
    # Not on_call_tool=: a reviewed call may answer with a task (a dict), which add_request_handler's type allows.
    server.add_request_handler("tools/call", types.CallToolRequestParams, _call_tool)
    serve_tasks(server)  # MCP's tasks extension: a reviewed call as a task the client polls (gateway/tasks.py)
    return server
