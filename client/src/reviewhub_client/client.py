"""The synchronous client of ReviewHub's agent API v1."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import stamina

from . import _api
from .errors import ApiError, NotApproved, ReviewHubError, ToolFailed
from .lease import Renewer, is_unknown, refuse_unknown, running_with, unknown_from
from .models import DONE, Call, Claim, Tier, Tool, Webhook


@dataclass(frozen=True)
class Execution:
    """How an approved call went: `ran` is True in the one process that ran the tool; everyone gets `output`."""

    ran: bool
    output: str
    call: Call


def approved_key(call: Call) -> str:
    """The execution key of an approved call; NotApproved for anything else (fail closed)."""
    decision = call.decision
    if decision is None or not decision.approved or not decision.execution_key:
        verdict = decision.verdict if decision else call.status
        raise NotApproved(f"call {call.id} is not approved ({verdict}); it must not run")
    return decision.execution_key


def approved_arguments(call: Call) -> dict:
    """The arguments to execute: the reviewer's edit if any, else the call's as proposed."""
    arguments = call.decision.arguments if call.decision else None
    return dict(call.arguments if arguments is None else arguments)


def recorded(call: Call) -> Execution:
    """What the process that ran the call reported, for a process that lost the claim."""
    if call.result is None:
        raise ReviewHubError(f"call {call.id} is {call.status} but has no recorded result")
    if not call.result.ok:
        raise ToolFailed(call.result.output)
    return Execution(ran=False, output=call.result.output, call=call)


class ReviewHub:
    """`ReviewHub(url, token)`: declare tools, propose calls, wait for decisions, claim and report executions."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        busy_timeout: float = _api.BUSY_TIMEOUT,
        transport: Any = None,
    ):
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=_api.headers(token), timeout=timeout, transport=transport
        )
        # A request answered 503 or 429 with Retry-After is sent again after the wait it
        # asks, for up to busy_timeout seconds (_api.busy_backoff).
        self._until_let_in = stamina.RetryingCaller(attempts=None, timeout=busy_timeout).on(_api.busy_backoff)

    def __enter__(self) -> "ReviewHub":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, spec: _api.Spec, model: Any) -> Any:
        return self._until_let_in(self._send_once, spec, model)

    def _send_once(self, spec: _api.Spec, model: Any) -> Any:
        return _api.parse(self.http.request(spec.method, spec.path, **_api.request_kwargs(spec)), model)

    def declare_tool(
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
        """Declare a tool; `idempotent=True`: a second run with the same execution key does no harm (a lapsed
        claim is then released to be claimed again, instead of asking a reviewer whether it ran)."""
        fields = {"description": description, "input_schema": input_schema, "tier": tier, "decisions": decisions}
        fields |= {"description_template": description_template, "key_fields": key_fields, "idempotent": idempotent}
        return self._send(_api.declare_tool(name, **fields), Tool)

    def tools(self) -> list[Tool]:
        return self._send(_api.list_tools(), list[Tool])

    def propose(
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
        """Propose a call; the same idempotency key again returns the same call. With a `question`
        ({"prompt", "schema", "payload"}) the call asks a person: the answer comes back as `decision.answer`.
        With `kind="checkpoint"` (a declared tool whose schema requires a string `draft`) it asks a person to approve,
        edit or send back the draft: an edit comes back as `decision.arguments["draft"]`."""
        fields = {"thread_id": thread_id, "tool": tool, "arguments": arguments, "idempotency_key": idempotency_key}
        fields |= {"reasoning": reasoning, "user_request": user_request, "facts": facts, "question": question}
        fields |= {"kind": kind}
        return self._send(_api.propose(**fields), Call)

    def call(self, call_id: int, *, wait: float = 0) -> Call:
        """The call; with `wait` (up to 60 s) the server answers as soon as it is no longer pending."""
        return self._send(_api.get_call(call_id, wait), Call)

    def wait(self, call_id: int, *, timeout: float | None = None) -> Call:
        """Long-poll until the call is decided (or `timeout` seconds pass; None waits as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _api.MAX_WAIT if deadline is None else deadline - time.monotonic()
            call = self.call(call_id, wait=max(1, min(_api.MAX_WAIT, left)))
            if not call.pending or (deadline is not None and time.monotonic() >= deadline):
                return call

    def claim(self, call_id: int, execution_key: str) -> Claim:
        return self._send(_api.claim(call_id, execution_key), Claim)

    def report(self, call_id: int, execution_key: str, *, ok: bool, output: str) -> Call:
        return self._send(_api.report(call_id, execution_key, ok, output), Call)

    def add_webhook(self, url: str) -> Webhook:
        return self._send(_api.add_webhook(url), Webhook)

    def execute_once(
        self, call_id: int, tool: Callable[..., Any], *, poll: float = 0.2, timeout: float = 300
    ) -> Execution:
        """Run `tool(**approved arguments)` only if this process wins the claim, and report its result; a process
        that loses gets the result the winner recorded (waiting while it runs, and claiming it again if the
        winner's claim lapsed on an idempotent tool). The claim is renewed in a background thread while `tool`
        runs. NotApproved if the call may not run; OutcomeUnknown at once if its claim lapsed without a report
        (nobody knows whether it ran: a reviewer settles it)."""
        deadline = time.monotonic() + timeout
        while True:
            call = self.call(call_id)
            refuse_unknown(call)
            key = approved_key(call)
            claim = self._claim(call_id, key)
            if claim.claimed:
                return self._run_claimed(claim, key, tool, approved_arguments(call))
            call = self._until_settled(claim.call, poll, deadline, timeout)
            if call.status in DONE:
                return recorded(call)

    def renew(self, call_id: int, execution_key: str) -> Call:
        """Renew this process's claim on the call for one more lease (execute_once does it by itself)."""
        return self._send(_api.renew(call_id, execution_key), Call)

    def _claim(self, call_id: int, key: str) -> Claim:
        try:
            return self.claim(call_id, key)
        except ApiError as exc:
            raise unknown_from(call_id, exc) if is_unknown(exc) else exc

    def _report(self, call_id: int, key: str, *, ok: bool, output: str) -> Call:
        try:
            return self.report(call_id, key, ok=ok, output=output)
        except ApiError as exc:
            raise unknown_from(call_id, exc) if is_unknown(exc) else exc

    def _run_claimed(self, claim: Claim, key: str, tool: Callable[..., Any], arguments: dict) -> Execution:
        call_id = claim.call.id
        with Renewer(lambda: self.renew(call_id, key), claim.lease_seconds):
            try:
                with running_with(key):
                    output = _api.tool_output(tool(**arguments))
            except Exception as exc:
                self._report(call_id, key, ok=False, output=f"{type(exc).__name__}: {exc}")
                raise
        return Execution(ran=True, output=output, call=self._report(call_id, key, ok=True, output=output))

    def _until_settled(self, call: Call, poll: float, deadline: float, timeout: float) -> Call:
        """The call once no longer executing elsewhere: done, released again (approved), or outcome unknown."""
        while call.status == "executing":
            if time.monotonic() > deadline:
                raise ReviewHubError(f"call {call.id} is still {call.status} after {timeout} s")
            time.sleep(poll)
            call = self.call(call.id)
        refuse_unknown(call)
        return call
