"""What the framework adapters share: running a framework's async tool body from the gate's thread, and the check
that every approved call of a resumed run really went through the gate."""

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .errors import ReviewHubError
from .gate import Gate

NEVER_CLAIMED = (
    "call {id} ({tool}) was approved but never ran through ReviewHub's gate: the tool ran without the execution "
    "claim (or not at all), so the reviewer's edit and exactly-once do not hold. {fix}"
)


def in_loop(loop: asyncio.AbstractEventLoop, run: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """A plain function for `gate.execute` (which runs in a worker thread) that runs the async `run` on `loop`."""

    def body(**arguments: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(run(**arguments), loop).result()

    return body


async def execute_async(gate: Gate, tool_call_id: str, run: Callable[..., Awaitable[Any]], **options: Any) -> str:
    """`gate.execute` from async code: the HTTP calls in a thread, the tool body on this event loop."""
    body = in_loop(asyncio.get_running_loop(), run)
    return await asyncio.to_thread(gate.execute, tool_call_id, body, **options)


def proposed(gate: Gate, tool_call_id: str | None) -> bool:
    """Whether this framework call was proposed to ReviewHub through this gate (then it runs through the gate)."""
    return tool_call_id is not None and gate.store.call_id(gate.thread_id, tool_call_id) is not None


def check_ran(gate: Gate, tool_call_ids: Iterable[str], *, fix: str) -> None:
    """Raise ReviewHubError if an approved call among these was never claimed: its tool ran outside the gate."""
    for tool_call_id in tool_call_ids:
        call = gate.hub.call(gate.call_for(tool_call_id))
        if call.status == "approved":
            raise ReviewHubError(NEVER_CLAIMED.format(id=call.id, tool=call.tool, fix=fix))
