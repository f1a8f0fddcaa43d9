"""Hints pushed to browsers after a commit. The database stays the truth:
a push only says "this call (or run) changed"; consumers re-read and render it."""

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

QUEUE_GROUP = "queue"

# The event loop of the ASGI server in this process, when there is one. The
# in-memory channel layer only works from that loop, so work running in other
# threads of the embedded mode sends through it.
main_loop: asyncio.AbstractEventLoop | None = None


def remember_loop(app):
    async def wrapper(scope, receive, send):
        global main_loop
        main_loop = asyncio.get_running_loop()
        return await app(scope, receive, send)

    return wrapper


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def send(group: str, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = main_loop
        if running is not None:
            running.create_task(layer.group_send(group, event))
        elif loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(layer.group_send(group, event), loop)
        else:
            async_to_sync(layer.group_send)(group, event)
    except Exception as exc:  # a push is a hint; the page re-reads the database anyway
        log.warning("live push to %s failed: %s", group, exc)


def call_changed(call_id: int) -> None:
    transaction.on_commit(lambda: send(QUEUE_GROUP, {"type": "call.changed", "call_id": call_id}))


def run_changed(run_id: int) -> None:
    transaction.on_commit(lambda: send(run_group(run_id), {"type": "run.changed", "run_id": run_id}))
