"""A tools/call that needs review: proposed once per client request, waited on with progress notifications,
answered with the upstream's result (after a claim exactly one caller wins), a rejection, or "still waiting".

A retry of the same request (same gateway identity, tool and arguments, over stdio or HTTP alike) finds the same
call, pending or decided, until a client has had its outcome; a gateway restarted while waiting loses nothing:
the retry claims and executes.
"""

import asyncio
import contextlib
import time
from dataclasses import dataclass

import anyio
import mcp.types as types
from django.conf import settings

from approvals.models import ToolCall
from remote.services import ApiError, Waiter

from . import services, tasks
from .runtime import Runtime, db
from .upstreams import error_result, text_of

DONE = (ToolCall.Status.EXECUTED, ToolCall.Status.FAILED)
ENDED: dict[str, str] = {
    ToolCall.Status.EXPIRED: "Nobody reviewed this call in time; it expired. Nothing was done.",
    ToolCall.Status.CANCELLED: "This call was cancelled. Nothing was done.",
}


UNKNOWN = (
    "The claim on this call (call {call}, {link}) lapsed before its result came back: nobody knows whether it ran, "
    "so it is not run again. A reviewer settles it (it ran, run it now, or fail the run); call the same tool with "
    "the same arguments again later for the outcome."
)


USER_META = "reviewhub/user"  # the person a client acts for, in a call's `_meta` or its initialize request's
UNSAID = "not said by the client"


@dataclass(frozen=True)
class Asker:
    """Who asked: the client (its name and version), the user as the client reports it, the thread its calls are
    grouped in."""

    client: str
    user: str
    thread: str
    idempotency: str  # the client's own key for this request, when it sends one


def _reported_user(meta: dict, params) -> str:
    """The person the client says it acts for (`_meta` "reviewhub/user" on the call, else on its initialize
    request); never this process's OS user, which over stdio is whoever started the client."""
    opened = dict(getattr(params, "meta", None) or {}) if params is not None else {}
    return str(meta.get(USER_META) or opened.get(USER_META) or UNSAID)[:200]


def _asker(ctx, runtime: Runtime) -> Asker:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    client = f"{info.name} {info.version}".strip() if info is not None else "an MCP client"
    meta = dict(ctx.meta or {})
    session = (getattr(ctx.request, "headers", None) or {}).get("mcp-session-id") or runtime.started
    return Asker(client, _reported_user(meta, params), f"mcp-{session}"[:200], str(meta.get("idempotencyKey", "")))


async def _facts(runtime: Runtime, entry: services.Entry, arguments: dict) -> dict:
    if not entry.facts_tool:
        return {}
    shared = {name: arguments[name] for name in entry.facts_arguments if name in arguments}
    try:
        result = await runtime.upstreams.call(entry.upstream, entry.facts_tool, shared, read_only=True)
    except Exception as exc:
        return {entry.facts_tool: f"could not be fetched: {exc}"}
    return {entry.facts_tool: text_of(result)}


def _proposal(runtime: Runtime, entry: services.Entry, arguments: dict, asker: Asker, facts: dict) -> dict:
    asked = f"Asked by {asker.client} (user: {asker.user}) through the MCP gateway {runtime.gateway.name}."
    return {
        "thread_id": asker.thread,
        "tool": entry.name,
        "arguments": arguments,
        "reasoning": asked,
        "user_request": f"{asker.client} (user: {asker.user}) called {entry.name} on {entry.upstream}.",
        "facts": facts | {"client": asker.client, "user": asker.user},
    }


async def _open(ctx, runtime: Runtime, entry: services.Entry, arguments: dict) -> ToolCall | types.CallToolResult:
    asker = _asker(ctx, runtime)
    key = services.request_key(
        gateway=runtime.gateway.name, tool=entry.name, arguments=arguments, key=asker.idempotency
    )
    call = await db(services.call_find, gateway=runtime.gateway, key=key)
    if call is not None:
        return call
    facts = await _facts(runtime, entry, arguments)
    proposal = _proposal(runtime, entry, arguments, asker, facts)
    try:
        return await db(services.call_open, gateway=runtime.gateway, key=key, proposal=proposal)
    except ApiError as exc:  # arguments failing the schema (the field named), a rule forbidding it
        return error_result(f"{exc.detail} Nothing was done.")


async def _wait(ctx, call_id: int, until: float, statuses) -> ToolCall:
    """The call once its status leaves `statuses`, or as it is at `until`; progress sent all along."""
    step = min(settings.REVIEWHUB_MCP_PROGRESS_SECONDS, settings.REVIEWHUB_WAIT_RECHECK_SECONDS)
    started = last_progress = time.monotonic()
    async with Waiter(call_id) as waiter:
        while True:
            call = await db(services.call_read, call_id=call_id)
            now = time.monotonic()
            if call.status not in statuses or now >= until:
                return call
            if now - last_progress >= settings.REVIEWHUB_MCP_PROGRESS_SECONDS:
                waited = int(now - started)
                await ctx.session.report_progress(waited, None, f"Waiting for a reviewer ({waited} s)")
                last_progress = now
            waiter.event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.event.wait(), timeout=max(0.05, min(step, until - now)))


def _changed_note(call: ToolCall) -> str:
    changes = call.changes
    if not changes:
        return ""
    parts = ", ".join(f"{c['name']}: {c['before']!r} → {c['after']!r}" for c in changes)
    return f"A reviewer changed the arguments before this ran: {parts}."


SETTLED = "A reviewer recorded what this call did (its result never came back)."


def _settled(call: ToolCall) -> types.CallToolResult:
    """A call whose claim lapsed before its result came back, settled by a reviewer: "ran" answers what they
    recorded, "fail" their reason as a tool error."""
    if call.status != ToolCall.Status.EXECUTED:
        return error_result(call.output or call.remote.reported_output)
    texts = (SETTLED, call.output)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text) for text in texts])


def executed_result(call: ToolCall) -> types.CallToolResult:
    stored = call.gateway.result  # what the upstream answered; none when a reviewer settled the call
    result = types.CallToolResult.model_validate(stored) if stored else _settled(call)
    note = _changed_note(call)
    if note:
        result = result.model_copy(update={"content": [types.TextContent(type="text", text=note), *result.content]})
    return result


def refused_result(*, call: ToolCall) -> types.CallToolResult:
    """Sync: it reads the final decision."""
    if call.status in ENDED:
        return error_result(ENDED[call.status])
    if call.status != ToolCall.Status.REJECTED:
        return error_result(call.output or f"This call is {call.status}. Nothing was done.")
    decision = call.final_decision()
    reason = decision.reason if decision and decision.reason else "no reason given"
    text = f"A reviewer rejected this call: {reason}. Nothing was done."
    if decision and decision.guidance:
        text += f" The reviewer says: {decision.guidance}"
    return error_result(text)


def _still_waiting(call: ToolCall) -> types.CallToolResult:
    return error_result(
        f"This call is still waiting for a reviewer (call {call.pk}, {services.call_link(call)}). "
        "Nothing was done yet. Call the same tool with the same arguments again to keep waiting: it is not "
        "proposed twice."
    )


async def _renew_while(runtime: Runtime, call_id: int) -> None:
    """Renew the claim every third of a lease while the upstream runs (cancelled when it answers)."""
    every = max(0.2, settings.EXECUTION_LEASE_SECONDS / 3)
    while True:
        await asyncio.sleep(every)
        try:
            await db(services.call_renew, gateway=runtime.gateway, call_id=call_id)
        except ApiError:
            return  # lapsed: the sweep settles it (claimed again if idempotent, else outcome unknown)


async def _run_upstream(runtime: Runtime, entry: services.Entry, call: ToolCall) -> None:
    """Call the upstream with the approved arguments and report what it said (a failure too: nothing is stuck)."""
    arguments = call.approved_arguments
    assert arguments is not None  # a call is approved with its arguments
    renewing = asyncio.create_task(_renew_while(runtime, call.pk))
    try:
        result = await runtime.upstreams.call(entry.upstream, entry.name, arguments)
    except Exception as exc:
        result = error_result(f"The server behind {entry.name} failed: {exc}")
    finally:
        renewing.cancel()
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    ok, output = not result.is_error, text_of(result)
    with contextlib.suppress(ApiError):  # lapsed meanwhile: the call's outcome is unknown, a reviewer settles it
        await db(services.call_finish, gateway=runtime.gateway, call_id=call.pk, result=dumped, ok=ok, output=output)


async def claim_and_run(runtime: Runtime, entry: services.Entry, call: ToolCall) -> None:
    try:
        won = await db(services.call_claim, gateway=runtime.gateway, call_id=call.pk)
    except ApiError:
        won = False
    if won:
        with anyio.CancelScope(shield=True):  # a client that goes away mid-call must not leave it unreported
            await _run_upstream(runtime, entry, call)
    else:
        await asyncio.sleep(0.2)  # another caller holds it, or is about to


async def _execute(ctx, runtime: Runtime, entry: services.Entry, call: ToolCall, until: float):
    """Exactly once: the caller that wins the claim calls the upstream; any other waits for its result (and claims
    it again if the winner's lease lapsed on an idempotent tool)."""
    while True:
        if call.status == ToolCall.Status.APPROVED:
            await claim_and_run(runtime, entry, call)
        call = await _wait(ctx, call.pk, until, (ToolCall.Status.EXECUTING,))
        if call.status != ToolCall.Status.APPROVED or time.monotonic() >= until:
            break
    if call.status in DONE:
        await db(services.call_answered, call_id=call.pk)
        return executed_result(call)
    if call.status == ToolCall.Status.OUTCOME_UNKNOWN:
        return error_result(UNKNOWN.format(call=call.pk, link=services.call_link(call)))
    if call.status in ToolCall.RUNNABLE:
        return error_result(
            f"This call was approved and is being executed elsewhere (call {call.pk}, {services.call_link(call)}); "
            "call the same tool with the same arguments again for its result."
        )
    await db(services.call_answered, call_id=call.pk)
    return await db(refused_result, call=call)


async def call_reviewed(ctx, runtime: Runtime, entry: services.Entry, arguments: dict) -> types.CallToolResult | dict:
    opened = await _open(ctx, runtime, entry, arguments)
    if isinstance(opened, types.CallToolResult):
        return opened
    if opened.status == ToolCall.Status.PENDING and tasks.client_wants_tasks(ctx):
        return tasks.created(runtime, opened)  # the client polls tasks/get (gateway/polling.py)
    until = time.monotonic() + runtime.gateway.answer_after_seconds
    call = await _wait(ctx, opened.pk, until, (ToolCall.Status.PENDING,))
    if call.status == ToolCall.Status.PENDING:
        return _still_waiting(call)
    if call.status in (*ToolCall.RUNNABLE, ToolCall.Status.OUTCOME_UNKNOWN, *DONE):
        return await _execute(ctx, runtime, entry, call, until)
    await db(services.call_answered, call_id=call.pk)
    return await db(refused_result, call=call)
