"""Hints pushed to browsers after a commit. The database stays the truth:
a push only says "this call (or run) changed"; the receiving side re-reads it.

Beside it: fanout.py, the queue pushes worked out once per ASGI process; consumers.py and routing.py, the
WebSocket side (thin: check the login, join a group, pass hints on)."""

import asyncio
import logging
import os
import threading
import uuid

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

QUEUE_GROUP = "queue"

# The event loop of the ASGI server in this process, when there is one. The
# in-memory channel layer only works from that loop, so work running in other
# threads of the embedded mode (agent steps, sync views) sends through it.
main_loop: asyncio.AbstractEventLoop | None = None


def remember_loop(app):
    async def wrapper(scope, receive, send):
        global main_loop
        main_loop = asyncio.get_running_loop()
        return await app(scope, receive, send)

    return wrapper


# Processes with no ASGI server (a Celery worker, a command) send from an event
# loop of their own, kept in a thread: the Redis layer keeps its connection on
# that loop between pushes, instead of opening one per push.
_own_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_own_loop_lock = threading.Lock()


def _sending_loop() -> asyncio.AbstractEventLoop:
    global _own_loop
    with _own_loop_lock:
        if _own_loop is None or _own_loop[0] != os.getpid():  # none yet, or inherited through a fork
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="live-push").start()
            _own_loop = (os.getpid(), loop)
        return _own_loop[1]


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("live push failed: %s", future.exception())


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
            running.create_task(layer.group_send(group, event)).add_done_callback(_log_failure)
        elif loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(layer.group_send(group, event), loop).add_done_callback(_log_failure)
        elif isinstance(layer, InMemoryChannelLayer):
            return  # no ASGI server has run in this process, so nobody here listens
        else:  # a Celery worker, a command: through Redis, from our own loop
            asyncio.run_coroutine_threadsafe(layer.group_send(group, event), _sending_loop()).result(timeout=5)
    except Exception as exc:  # a push is a hint; the page re-reads the database anyway
        log.warning("live push to %s failed: %s", group, exc)


def call_changed(call_id: int) -> None:
    # Each hint gets its own id, so each ASGI process renders it once for all its sockets.
    transaction.on_commit(
        lambda: send(QUEUE_GROUP, {"type": "call.changed", "call_id": call_id, "hint": uuid.uuid4().hex})
    )


def run_changed(run_id: int) -> None:
    transaction.on_commit(lambda: send(run_group(run_id), {"type": "run.changed", "run_id": run_id}))
