"""tasks/get and tasks/cancel of MCP's tasks extension (gateway/tasks.py): a client polls a reviewed call's task."""

from mcp.shared.exceptions import MCPError

from approvals.models import ToolCall

from . import services
from .reviewed import DONE, claim_and_run, executed_result, refused_result
from .runtime import Runtime, db
from .tasks import (
    EXTENSION,
    MISSING_CAPABILITY,
    WORKING,
    TaskParams,
    call_id_of,
    client_wants_tasks,
    task_fields,
    task_not_found,
)


def _require_extension(ctx) -> None:
    if not client_wants_tasks(ctx):
        data: dict[str, object] = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        raise MCPError(code=MISSING_CAPABILITY, message="Missing required client capability", data=data)


async def _read(ctx, params: TaskParams) -> tuple[Runtime, ToolCall]:
    _require_extension(ctx)
    runtime: Runtime = ctx.lifespan_context
    call_id = call_id_of(runtime, params.task_id)
    try:
        return runtime, await db(services.call_read, call_id=call_id)
    except ToolCall.DoesNotExist:
        raise task_not_found() from None


async def _run_if_approved(runtime: Runtime, call: ToolCall) -> ToolCall:
    """An approved call runs now, once (whoever polls first wins the claim); its state after."""
    if call.status != ToolCall.Status.APPROVED:
        return call
    tool = call.remote.tool  # its name is the upstream's, not the prefixed one
    entry = (await runtime.catalog()).get(tool.name) if tool is not None else None
    if entry is None:
        return call  # the tool left the gateway's catalog: it stays approved, for a reviewer to see
    await claim_and_run(runtime, entry, call)
    return await db(services.call_read, call_id=call.pk)


async def task_get(ctx, params: TaskParams) -> dict:
    runtime, call = await _read(ctx, params)
    call = await _run_if_approved(runtime, call)
    if call.status in WORKING:
        message = WORKING[call.status].format(call=call.pk, link=services.call_link(call))
        return task_fields(runtime, call, "working", statusMessage=message)
    result = executed_result(call) if call.status in DONE else await db(refused_result, call=call)
    await db(services.call_answered, call_id=call.pk)
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return task_fields(runtime, call, "completed", result=dumped)


async def task_cancel(ctx, params: TaskParams) -> dict:
    """Withdraw a call nobody has decided yet; a decided one goes on (the extension's cancellation is cooperative)."""
    runtime, call = await _read(ctx, params)
    if call.status == ToolCall.Status.PENDING:
        await db(services.call_withdraw, gateway=runtime.gateway, call_id=call.pk)
    return {}


def serve_tasks(server) -> None:
    """Answer the extension's methods on this server and advertise it (server/discover)."""
    server.add_request_handler("tasks/get", TaskParams, task_get)
    server.add_request_handler("tasks/cancel", TaskParams, task_cancel)
    server.extensions[EXTENSION] = {}
