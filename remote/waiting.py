"""Long-polls: a GET with ?wait= returns the moment a decision on its call commits.

Each waiting request holds a Waiter (an asyncio.Event) in its process. A decision wakes the waiters of its
calls after the commit: in the embedded default directly (one process); with REDIS_URL through a
Redis pub/sub channel that one listener per process reads, so every ASGI process wakes its own. The wake-up
of a decision tells its call as the decision's transaction left it (remote/resume.outbox): the long-poll it
wakes answers that, with no read of its own. A call woken without it (a cancel, the re-check below) is read.
Every REVIEWHUB_WAIT_RECHECK_SECONDS one task per process reads, in one query, which of the calls its
long-polls wait on are no longer pending, and wakes those: a lost wake-up costs at most that long, never a
missed decision, and a hundred waiting agents cost one query per interval, not a hundred (each with a new
database connection).
"""

import asyncio
import contextlib
import json
import logging
import threading
from collections import defaultdict

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)

CHANNEL = "reviewhub:calls-decided"
# A wake-up telling calls larger than this (bytes of JSON: arguments of that size) tells only their ids: Redis
# copies each message to every process's listener, and each long-poll can read its call instead.
TOLD_AT_MOST = 64 * 1024

_lock = threading.Lock()
_waiters: dict[int, set["Waiter"]] = defaultdict(set)
_listeners: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
_checkers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
_publisher = None


def _wake_here(call_ids, answers: dict | None = None) -> None:
    """Wake this process's waiters of these calls, each told its call's answer if `answers` has it (by str(id))."""
    answers = answers or {}
    with _lock:
        found = [(waiter, answers.get(str(id_))) for id_ in call_ids for waiter in _waiters.get(int(id_), ())]
    for waiter, answer in found:
        with contextlib.suppress(RuntimeError):  # that loop has closed: its request is gone
            waiter.loop.call_soon_threadsafe(waiter.woken, answer)


def _message(data) -> tuple[list, dict | None]:
    """A wake-up as published: {"calls": [...], "answers": {...}}, or a bare list of ids (the version before's,
    still published by a process not yet upgraded in a rolling deploy)."""
    if isinstance(data, list):
        return data, None
    return data["calls"], data.get("answers")


def wake(call_ids: list[int], answers: dict | None = None) -> None:
    """Tell every waiter of these calls, in any process, that they changed (after a commit): with `answers`
    ({str(id): the call as its agent reads it}), what they changed to; else they read them again."""
    if not call_ids:
        return
    if not settings.REDIS_URL:
        _wake_here(call_ids, answers)
        return
    global _publisher
    try:
        if _publisher is None:
            import redis

            _publisher = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5)
        _publisher.publish(CHANNEL, _published(call_ids, answers))
    except Exception as exc:  # the waiters' re-check reads the decision anyway
        log.warning("could not publish a wake-up: %s", exc)
        _wake_here(call_ids, answers)


def _published(call_ids: list[int], answers: dict | None) -> str:
    message = json.dumps({"calls": call_ids, "answers": answers or {}})
    if len(message) > TOLD_AT_MOST:
        message = json.dumps({"calls": call_ids, "answers": {}})
    return message


async def _listen() -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(settings.REDIS_URL)
    pubsub = client.pubsub()
    try:
        await pubsub.subscribe(CHANNEL)
        async for message in pubsub.listen():
            if message.get("type") == "message":
                _wake_here(*_message(json.loads(message["data"])))
    finally:
        await pubsub.aclose()
        await client.aclose()


def _keep_running(tasks: dict[asyncio.AbstractEventLoop, asyncio.Task], loop: asyncio.AbstractEventLoop, start) -> None:
    """One task per event loop in `tasks`: started by `start()` if this loop has none running (closed loops
    are forgotten)."""
    for stale in [other for other in tasks if other.is_closed()]:
        del tasks[stale]
    task = tasks.get(loop)
    if task is None or task.done():
        tasks[loop] = loop.create_task(start())


def _waited_on(loop: asyncio.AbstractEventLoop) -> list[int]:
    with _lock:
        return [call_id for call_id, waiters in _waiters.items() if any(waiter.loop is loop for waiter in waiters)]


def decided_among(call_ids: list[int]) -> list[int]:
    """Which of these calls are no longer pending, in one query; the connection is not kept between checks."""
    from approvals.models import ToolCall

    try:
        decided = ToolCall.objects.filter(pk__in=call_ids).exclude(status=ToolCall.Status.PENDING)
        return list(decided.values_list("pk", flat=True))
    finally:
        connection.close()


async def _recheck(loop: asyncio.AbstractEventLoop) -> None:
    """While this loop has long-polls waiting: every interval, wake those whose call was decided meanwhile."""
    while True:
        await asyncio.sleep(settings.REVIEWHUB_WAIT_RECHECK_SECONDS)
        call_ids = _waited_on(loop)
        if not call_ids:  # nobody waits: the next Waiter starts a new check (same loop, so no await between)
            _checkers.pop(loop, None)
            return
        try:
            _wake_here(await sync_to_async(decided_among, thread_sensitive=False)(call_ids))
        except Exception as exc:  # the next check tries again; the waiters' own deadlines still hold
            log.warning("could not re-check the waiting calls: %s", exc)


class Waiter:
    """`async with Waiter(call_id) as waiter:` registers before the first read, so no wake-up falls between.
    `waiter.event` is set when the call changed; `waiter.answer` is then the call as the decision's commit left
    it, if the wake-up told it (else None: read it)."""

    def __init__(self, call_id: int):
        self.call_id = call_id
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()
        self.answer: dict | None = None

    def woken(self, answer: dict | None = None) -> None:
        """In its loop: the call changed (a later wake-up without an answer keeps the one told)."""
        if answer is not None:
            self.answer = answer
        self.event.set()

    async def __aenter__(self) -> "Waiter":
        if settings.REDIS_URL:
            _keep_running(_listeners, self.loop, _listen)
        with _lock:
            _waiters[self.call_id].add(self)
        _keep_running(_checkers, self.loop, lambda: _recheck(self.loop))
        return self

    async def __aexit__(self, *exc) -> None:
        with _lock:
            waiters = _waiters.get(self.call_id)
            if waiters is not None:
                waiters.discard(self)
                if not waiters:
                    del _waiters[self.call_id]
