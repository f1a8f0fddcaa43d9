"""How many HTTP requests an ASGI process works on at once (settings.WEB_REQUEST_SLOTS), each on one of the
process's WEB_REQUEST_SLOTS threads, which keep their database connection between requests
(WEB_CONN_MAX_AGE seconds; one its server ended while idle is dropped before reuse, by a look at its socket,
not a `SELECT 1`: runtime/connections.py). The other requests wait their turn in the event loop,
holding no thread and no connection.

Django under ASGI gives each request's sync code a new thread (asgiref's ThreadSensitiveContext), and each
thread opens a database connection of its own and closes it at the end (CONN_MAX_AGE 0: a connection kept by
a thread that ends would leak). A hundred agents proposing at once were sixty threads per process and ninety
PostgreSQL connections (`max_connections` is 100), those threads starved the process's event loop — the
responses, the channel layer, the queue's live pushes — of the GIL, and every request paid for a new
connection: about 13 ms of PostgreSQL's CPU (a backend started, its caches filled) and 2-3 ms of ours, as
much as the proposal itself (bench/agents_fleet.py).

With 100 agents proposing at once on two cores (bench/agents_waiting.py), 8 slots per process left the queue
push's p99 at 1.7-2.6 s after the proposal's answer, 4 at 0.9 s, 2 at 0.3-0.4 s, and 2 answered the hundred
soonest: more threads only take turns at the GIL, and the event loop waits with them.

A request that waits for something other than this process (a long-poll) gives its slot back while it waits
(`async with released(): ...`) and takes one again, maybe another thread, for its next sync work, before any
request waiting for one: what it does after (a read and its answer) is short, and the agent waits for it. One
told its answer by the decision (remote/api.py) does none before it answers: only Django's close of its response
waits for a slot, after the answer is sent (decision → long-poll p99 at 1,000 agents, bench/README.md).
That needs its request to go through Django's async middleware chain (runtime/handler.py: an async view's do,
a sync view's run the sync chain in one hop) with every middleware able to run async
(reviewhub/staticfiles.py): below a sync-only one, Django runs the request from a thread it holds to the end.

A read (GET, HEAD) waiting for a slot is given one before any write waiting (POST, PUT, ...), in the order the
reads came: a long-poll's first read, an agent's look at its call's decision, a reviewer's page. While a fleet
proposes, proposals queue by the hundred, each ~15 ms of work; a read behind them waited seconds for its few
milliseconds (decision → long-poll p50 3.2-33 s, bench/README.md, issue 26). Writes still get every slot no
read waits for, and reads are short and bounded by their clients (an agent long-polls one call at a time).
"""

import asyncio
import collections
import contextlib
import contextvars
import enum
import threading
import weakref
from concurrent.futures import Executor, Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core.signals import request_started
from django.db import DEFAULT_DB_ALIAS, connections

from runtime.connections import close_ended_by_server

_pools: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool]" = weakref.WeakKeyDictionary()
_thread = threading.local()
READS = ("GET", "HEAD")  # methods whose requests wait for a slot before the others' (Turn)


def _keep_connection() -> None:
    """A slot thread's start: its connection is kept between requests (this thread's copy of the settings)."""
    _thread.slot = True
    connection = connections[DEFAULT_DB_ALIAS]
    connection.settings_dict = connection.settings_dict | {"CONN_MAX_AGE": settings.WEB_CONN_MAX_AGE}


def _drop_ended_connection(**kwargs) -> None:
    """At a request's start, on its slot's thread (request_started's sync receivers run there, after Django's
    close_old_connections): the kept connection is dropped if its server ended it while it was idle."""
    if in_slot_thread():
        close_ended_by_server()


request_started.connect(_drop_ended_connection, dispatch_uid="runtime.slots.drop_ended_connection")


def in_slot_thread() -> bool:
    """Whether this is a slot's thread, whose connection the next request on it uses again."""
    return getattr(_thread, "slot", False)


class Turn(enum.Enum):
    """Where a request waiting for a slot stands: the woken long-polls, then the reads, then the writes."""

    WOKEN = "woken"
    READ = "read"
    WRITE = "write"


class _Pool:
    """The process's slot threads: the idle ones, and the requests waiting for one, reads before writes."""

    def __init__(self, size: int):
        self.size = size
        self.idle = [
            ThreadPoolExecutor(1, thread_name_prefix="web-slot", initializer=_keep_connection) for _ in range(size)
        ]
        self.reads: collections.deque[asyncio.Future[ThreadPoolExecutor]] = collections.deque()
        self.writes: collections.deque[asyncio.Future[ThreadPoolExecutor]] = collections.deque()

    async def take(self, turn: Turn) -> ThreadPoolExecutor:
        """A thread, after the requests waiting ahead of this turn."""
        if self.idle:
            return self.idle.pop()
        future = asyncio.get_running_loop().create_future()
        line = self.writes if turn is Turn.WRITE else self.reads
        line.appendleft(future) if turn is Turn.WOKEN else line.append(future)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed a thread as it was cancelled
                self.give(future.result())
            with contextlib.suppress(ValueError):
                line.remove(future)
            raise

    def give(self, thread: ThreadPoolExecutor) -> None:
        for line in (self.reads, self.writes):
            while line:
                future = line.popleft()
                if not future.done():
                    future.set_result(thread)
                    return
        self.idle.append(thread)


class _Slot(Executor):
    """The executor a request's sync code runs on: the thread of the slot it holds now. After a `released()`
    block the request holds none until its next sync work, which first takes one (Turn.WOKEN): a long-poll
    answered from its wake-up (remote/api.py) sends its answer before, and only Django's close of its response
    waits for a slot."""

    def __init__(self, pool: _Pool):
        self.pool = pool
        self.thread: ThreadPoolExecutor | None = None
        self.waiting = False  # in a released() block: no sync work may run
        self.retaking: asyncio.Task | None = None

    async def take(self, turn: Turn) -> None:
        self.thread = await self.pool.take(turn)

    def give_back(self) -> None:
        if self.thread is not None:
            self.pool.give(self.thread)
            self.thread = None

    def end(self) -> None:
        """The request is over: a slot it was still waiting for is not taken, the one it holds is given back."""
        if self.retaking is not None:
            self.retaking.cancel()  # pool.take gives back a thread handed to it as it was cancelled
        self.give_back()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if self.thread is not None:
            return self.thread.submit(fn, *args, **kwargs)
        if self.waiting:
            raise RuntimeError("sync work in a request that gave its slot back")
        # Called in the event loop (asyncio's run_in_executor): this work runs once the request has a slot again.
        if self.retaking is None:
            self.retaking = asyncio.get_running_loop().create_task(self.take(Turn.WOKEN))
        done: Future = Future()
        self.retaking.add_done_callback(lambda retake: self._run_after(retake, done, fn, args, kwargs))
        return done

    def _run_after(self, retake: asyncio.Task, done: Future, fn, args, kwargs) -> None:
        """In the event loop, once the slot is taken again (or not: the request ended): run `fn` there into `done`."""
        if self.retaking is retake:
            self.retaking = None
        if retake.cancelled() or self.thread is None:
            done.cancel()  # the request ended before it had a slot again: `fn` never runs
        elif done.set_running_or_notify_cancel():  # else its awaiter was cancelled meanwhile: nothing to run
            self.thread.submit(fn, *args, **kwargs).add_done_callback(lambda ran: _copy(ran, done))


def _copy(ran: Future, done: Future) -> None:
    if (error := ran.exception()) is not None:
        done.set_exception(error)
    else:
        done.set_result(ran.result())


_slot: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("web_request_slot", default=None)


def _pool(size: int) -> _Pool:
    loop = asyncio.get_running_loop()
    if loop not in _pools or _pools[loop].size != size:  # tests change the setting
        _pools[loop] = _Pool(size)
    return _pools[loop]


def limited(app):
    """The ASGI app, with at most WEB_REQUEST_SLOTS of its HTTP requests at work at once (0: no limit)."""

    async def limited_app(scope, receive, send):
        size = settings.WEB_REQUEST_SLOTS
        if scope["type"] != "http" or size <= 0:
            return await app(scope, receive, send)
        slot = _Slot(_pool(size))
        await slot.take(Turn.READ if scope.get("method") in READS else Turn.WRITE)
        token = _slot.set(slot)
        try:
            async with ThreadSensitiveContext(executor=slot):  # Django's own, inside, then changes nothing
                return await app(scope, receive, send)
        finally:
            _slot.reset(token)
            slot.end()

    return limited_app


async def close_connections() -> None:
    """Close the connections this loop's slot threads keep (tests: before the test database is dropped)."""
    pool = _pools.get(asyncio.get_running_loop())
    for thread in list(pool.idle) if pool else []:
        await asyncio.wrap_future(thread.submit(connections.close_all))


@contextlib.asynccontextmanager
async def released():
    """The request's slot given back for this block, and one taken again for its next sync work after it, before
    any request waiting for one (outside a limited app: nothing). No sync work in the block: it has no thread."""
    slot = _slot.get()
    if slot is None or slot.thread is None:
        yield
        return
    slot.give_back()
    slot.waiting = True
    try:
        yield
    finally:
        slot.waiting = False
