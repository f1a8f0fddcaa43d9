"""/api/v1/: the agent API (docs/api.md). Thin endpoints: the token's agent, one service, one schema.

Who may see what is approvals.access's (agent_calls, agent_tools); the services raise the 4xx.
"""

import asyncio
import logging
import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.http import HttpResponse
from django.utils import timezone
from ninja import NinjaAPI, Path, Query, Swagger

from approvals import access
from approvals.models import ToolCall
from runtime import slots

from . import http, services, waiting
from .models import DeclaredTool
from .schemas import (
    CallIn,
    CallOut,
    ClaimIn,
    ClaimOut,
    ErrorOut,
    ResultIn,
    ToolIn,
    ToolOut,
    TurnIn,
    WebhookIn,
    WebhookOut,
)
from .serialize import call_json, call_url
from .services.calls import agent_call, call_refusal
from .unclaimed import approval_read, approval_read_stamp

log = logging.getLogger(__name__)

api = NinjaAPI(
    title="ReviewHub agent API",
    version="1",
    description="Agents that run elsewhere propose tool calls for review and act on the decisions (docs/api.md).",
    urls_namespace="api-v1",
    auth=http.TokenAuth(),
    parser=http.StorableParser(),
    docs=Swagger(settings={"persistAuthorization": False}),
    docs_url="/docs",
)
http.install(api)

CALL_ID = Path(..., ge=1, le=2**63 - 1)
ERRORS = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 409: ErrorOut, 413: ErrorOut, 422: ErrorOut}


def _tool_json(tool: DeclaredTool) -> dict:
    return {"name": tool.name, "version": tool.version, "created_at": tool.created_at, **tool.declaration()}


@api.get("/tools", response={200: list[ToolOut], **ERRORS}, summary="The agent's tools, current versions")
def tools_list(request):
    tools = access.agent_tools(request.agent.user, DeclaredTool.objects.filter(current=True))
    return [_tool_json(tool) for tool in tools.order_by("name")]


@api.put("/tools/{name}", response={200: ToolOut, **ERRORS}, summary="Declare a tool (a change is a new version)")
def tool_declare(request, payload: ToolIn, name: str = Path(..., pattern=r"^[A-Za-z0-9_-]{1,64}$")):
    tool = services.tool_declare(agent=request.agent, name=name, declaration=payload.model_dump())
    return _tool_json(tool)


@api.post("/calls", response={200: CallOut, 201: CallOut, **ERRORS}, summary="Propose a call")
def call_propose(request, payload: CallIn):
    # The answer is built from the call as the service wrote it (or read it, for a retry): nothing is read back.
    call, created = services.call_propose(agent=request.agent, proposal=payload.model_dump())
    if refusal := call_refusal(call):
        raise refusal
    return (201 if created else 200), call_json(call, request)


@api.post("/turns", response={200: CallOut, 201: CallOut, **ERRORS}, summary="Ask for a model turn to be reviewed")
def turn_propose(request, payload: TurnIn):
    call, created = services.turn_propose(agent=request.agent, proposal=payload.model_dump())
    return (201 if created else 200), call_json(call, request)


def _reread(request, call_id: int) -> ToolCall:
    return agent_call(request.agent, call_id)


def _decided_json(request, call_id: int) -> dict | None:
    """The answer, once the call is decided (built from the call as read, in the same hop to the request's
    thread); while it is pending, a hundred waiting agents must not hold a hundred PostgreSQL connections: the
    request gives back its slot while it waits, and its thread's connection serves the next request
    (runtime/slots.py); outside a slot's thread the connection is closed."""
    call = _reread(request, call_id)
    if not call.is_pending:
        return _answer(request, call)
    if not connection.in_atomic_block and not slots.in_slot_thread():
        connection.close()
    return None


@api.get(
    "/calls/{call_id}",
    response={200: CallOut, **ERRORS},
    auth=http.AsyncTokenAuth(),
    summary="A call; with wait, held until it is decided (at most 60 s)",
)
async def call_get(request, response: HttpResponse, call_id: int = CALL_ID, wait: float = Query(0, ge=0, le=60)):
    if wait > 0:
        deadline = time.monotonic() + wait
        async with waiting.Waiter(call_id) as waiter:
            while True:
                waiter.event.clear()  # before the read: a wake-up during it makes the wait below return at once
                if (decided := await sync_to_async(_decided_json)(request, call_id)) is not None:
                    return decided
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:  # woken by a decision, or by the process's re-check
                    async with slots.released():  # others' requests go on meanwhile (runtime/slots.py)
                        await _wait_for(waiter.event, left)
                except TimeoutError:
                    break  # the answer below reads it once more, decided or not
                # Told only after a read showed this agent its call (agent_call: who may see it): a call of
                # another agent's is a 404 before any wake-up is answered.
                if waiter.answer is not None:  # the decision's wake-up told the call as its commit left it
                    return _told(request, response, call_id, waiter.answer)
    return await sync_to_async(_call_out)(request, call_id)


async def _wait_for(event, timeout: float) -> None:
    await asyncio.wait_for(event.wait(), timeout)


def _told(request, response: HttpResponse, call_id: int, answer: dict) -> dict:
    """The call as the decision's wake-up told it (remote/resume.outbox), with no read and no sync work: equal to
    a GET after that commit, sent before the request has a slot again (runtime/slots.py). The read of an approval
    is noted as `_answer` notes it (remote/unclaimed.py), stamped now, once the answer is sent: a claim the agent
    makes meanwhile is later, so it still counts as this read's claim; an answer never sent is no read."""
    if answer["status"] == ToolCall.Status.APPROVED:
        _after_answer(response, _note_read, call_id, timezone.now())
    return {**answer, "url": call_url(call_id, request)}


def _after_answer(response: HttpResponse, work, *args) -> None:
    """`work(*args)` once the response is sent: Django's handlers call its close() then, on the request's thread,
    and close() calls its resource closers (Django's own list: the one a FileResponse's file is closed by)."""
    response._resource_closers.append(lambda: work(*args))  # type: ignore[attr-defined]


def _note_read(call_id: int, read_at) -> None:
    try:
        approval_read_stamp(call_id, read_at)
    except Exception:  # a closer's error is swallowed by Django: say it
        log.exception("could not note the read of call %s's approval", call_id)


def _call_out(request, call_id: int) -> dict:
    return _answer(request, _reread(request, call_id))


def _answer(request, call: ToolCall) -> dict:
    """The call as its agent reads it, the read noted when it is an approval (remote/unclaimed.py)."""
    approval_read(call)
    return call_json(call, request)


@api.post("/calls/{call_id}/claim", response={200: ClaimOut, **ERRORS}, summary="Claim the execution (one caller wins)")
def call_claim(request, payload: ClaimIn, call_id: int = CALL_ID):
    won, call = services.call_claim(agent=request.agent, call_id=call_id, key=payload.execution_key)
    lease = settings.EXECUTION_LEASE_SECONDS
    return {"claimed": won, "call": call_json(_reread(request, call.pk), request), "lease_seconds": lease}


@api.post("/calls/{call_id}/lease", response={200: CallOut, **ERRORS}, summary="Renew the claim while the tool runs")
def call_lease_renew(request, payload: ClaimIn, call_id: int = CALL_ID):
    call = services.call_lease_renew(agent=request.agent, call_id=call_id, key=payload.execution_key)
    return call_json(call, request)


@api.post("/calls/{call_id}/result", response={200: CallOut, **ERRORS}, summary="Report what executing it did")
def call_report(request, payload: ResultIn, call_id: int = CALL_ID):
    call = services.call_report(
        agent=request.agent, call_id=call_id, key=payload.execution_key, ok=payload.ok, output=payload.output
    )
    return call_json(_reread(request, call.pk), request)


@api.post("/webhooks", response={201: WebhookOut, **ERRORS}, summary="Register a webhook (the secret is shown once)")
def webhook_create(request, payload: WebhookIn):
    hook, secret = services.webhook_create(agent=request.agent, url=payload.url)
    return 201, {"id": hook.pk, "url": hook.url, "secret": secret}
