"""The asynchronous client of ReviewHub's agent API v1 (the same calls as `ReviewHub`, awaited)."""

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2 as httpx
import stamina

from . import _api
from .client import Execution, approved_arguments, approved_key, recorded
from .errors import ApiError, ReviewHubError
from .lease import AsyncRenewer, is_unknown, refuse_unknown, running_with, unknown_from
from .models import DONE, Call, Claim, Tier, Tool, Webhook


class AsyncReviewHub:
    """`AsyncReviewHub(url, token)`: the async twin of `ReviewHub`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        busy_timeout: float = _api.BUSY_TIMEOUT,
        transport: Any = None,
    ):
        self.http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=_api.headers(token), timeout=timeout, transport=transport
        )
        self._until_let_in = stamina.AsyncRetryingCaller(attempts=None, timeout=busy_timeout).on(_api.busy_backoff)

    async def __aenter__(self) -> "AsyncReviewHub":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _send(self, spec: _api.Spec, model: Any) -> Any:
        return await self._until_let_in(self._send_once, spec, model)

    async def _send_once(self, spec: _api.Spec, model: Any) -> Any:
        return _api.parse(await self.http.request(spec.method, spec.path, **_api.request_kwargs(spec)), model)

    async def declare_tool(
        self,
        name: str,
        *,
        input_schema: dict,
        description: str = "",
        tier: Tier = "approval",
        description_template: str | None = None,
        decisions: list[str] | None = None,
        key_fields: list[str] | None = None,
        idempotent: bool | None = None,
    ) -> Tool:
        fields = {"description": description, "input_schema": input_schema, "tier": tier, "decisions": decisions}
        fields |= {"description_template": description_template, "key_fields": key_fields, "idempotent": idempotent}
        return await self._send(_api.declare_tool(name, **fields), Tool)

    async def tools(self) -> list[Tool]:
        return await self._send(_api.list_tools(), list[Tool])

    async def propose(
        self,
        *,
        thread_id: str,
        tool: str,
        arguments: dict,
        idempotency_key: str,
        reasoning: str | None = None,
        user_request: str | None = None,
        facts: dict | None = None,
        question: dict | None = None,
        kind: str | None = None,
    ) -> Call:
        fields = {"thread_id": thread_id, "tool": tool, "arguments": arguments, "idempotency_key": idempotency_key}
        fields |= {"reasoning": reasoning, "user_request": user_request, "facts": facts, "question": question}
        fields |= {"kind": kind}
        return await self._send(_api.propose(**fields), Call)

    async def call(self, call_id: int, *, wait: float = 0) -> Call:
        return await self._send(_api.get_call(call_id, wait), Call)

    async def wait(self, call_id: int, *, timeout: float | None = None) -> Call:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _api.MAX_WAIT if deadline is None else deadline - time.monotonic()
            call = await self.call(call_id, wait=max(1, min(_api.MAX_WAIT, left)))
            if not call.pending or (deadline is not None and time.monotonic() >= deadline):
                return call

    async def claim(self, call_id: int, execution_key: str) -> Claim:
        return await self._send(_api.claim(call_id, execution_key), Claim)

    async def report(self, call_id: int, execution_key: str, *, ok: bool, output: str) -> Call:
        return await self._send(_api.report(call_id, execution_key, ok, output), Call)

    async def add_webhook(self, url: str) -> Webhook:
        return await self._send(_api.add_webhook(url), Webhook)

    async def execute_once(
        self, call_id: int, tool: Callable[..., Any], *, poll: float = 0.2, timeout: float = 300
    ) -> Execution:
        """As `ReviewHub.execute_once` (the claim renewed by a task while `tool` runs); `tool` may be a coroutine
        function."""
        deadline = time.monotonic() + timeout
        while True:
            call = await self.call(call_id)
            refuse_unknown(call)
            key = approved_key(call)
            claim = await self._guarded(call_id, self.claim(call_id, key))
            if claim.claimed:
                return await self._run_claimed(claim, key, tool, approved_arguments(call))
            call = await self._until_settled(claim.call, poll, deadline, timeout)
            if call.status in DONE:
                return recorded(call)

    async def renew(self, call_id: int, execution_key: str) -> Call:
        return await self._send(_api.renew(call_id, execution_key), Call)

    async def _guarded(self, call_id: int, request: Awaitable[Any]) -> Any:
        try:
            return await request
        except ApiError as exc:
            raise unknown_from(call_id, exc) if is_unknown(exc) else exc

    async def _run_claimed(self, claim: Claim, key: str, tool: Callable[..., Any], arguments: dict) -> Execution:
        call_id = claim.call.id
        async with AsyncRenewer(lambda: self.renew(call_id, key), claim.lease_seconds):
            try:
                with running_with(key):
                    output = tool(**arguments)
                    output = _api.tool_output(await output if inspect.isawaitable(output) else output)
            except Exception as exc:
                failed = f"{type(exc).__name__}: {exc}"
                await self._guarded(call_id, self.report(call_id, key, ok=False, output=failed))
                raise
        reported = await self._guarded(call_id, self.report(call_id, key, ok=True, output=output))
        return Execution(ran=True, output=output, call=reported)

    async def _until_settled(self, call: Call, poll: float, deadline: float, timeout: float) -> Call:
        while call.status == "executing":
            if time.monotonic() > deadline:
                raise ReviewHubError(f"call {call.id} is still {call.status} after {timeout} s")
            await asyncio.sleep(poll)
            call = await self.call(call.id)
        refuse_unknown(call)
        return call
