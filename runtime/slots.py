"""How many HTTP requests an ASGI process works on at once (settings.WEB_REQUEST_SLOTS); the others wait
their turn in the event loop, holding no thread and no database connection.

Django under ASGI gives each request's sync code a thread of its own (asgiref's ThreadSensitiveContext), and
each thread opens its own database connection. A hundred agents proposing at once were sixty threads per
process and ninety PostgreSQL connections (`max_connections` is 100), and those threads starved the process's
event loop — the responses, the channel layer and the queue's live pushes — of the GIL: a call's hint took
seconds to reach the queue after its commit (bench/agents_waiting.py).

A request that waits for something other than this process (a long-poll) gives its slot back while it waits:
`async with released(): ...`.
"""

import asyncio
import contextlib
import contextvars
import weakref

from django.conf import settings

_semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[int, asyncio.Semaphore]]" = (
    weakref.WeakKeyDictionary()
)


class _Slot:
    def __init__(self, semaphore: asyncio.Semaphore):
        self.semaphore, self.held = semaphore, False

    async def take(self) -> None:
        await self.semaphore.acquire()
        self.held = True

    def give_back(self) -> None:
        if self.held:
            self.held = False
            self.semaphore.release()


_slot: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("web_request_slot", default=None)


def _semaphore(size: int) -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    if loop not in _semaphores or _semaphores[loop][0] != size:  # tests change the setting
        _semaphores[loop] = (size, asyncio.Semaphore(size))
    return _semaphores[loop][1]


def limited(app):
    """The ASGI app, with at most WEB_REQUEST_SLOTS of its HTTP requests at work at once (0: no limit)."""

    async def limited_app(scope, receive, send):
        size = settings.WEB_REQUEST_SLOTS
        if scope["type"] != "http" or size <= 0:
            return await app(scope, receive, send)
        slot = _Slot(_semaphore(size))
        await slot.take()
        token = _slot.set(slot)
        try:
            return await app(scope, receive, send)
        finally:
            _slot.reset(token)
            slot.give_back()

    return limited_app


@contextlib.asynccontextmanager
async def released():
    """The request's slot given back for this block, and taken again after it (outside a limited app: nothing)."""
    slot = _slot.get()
    if slot is None or not slot.held:
        yield
        return
    slot.give_back()
    try:
        yield
    finally:
        await slot.take()
