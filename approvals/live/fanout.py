"""Live queue pushes, worked out once per ASGI process for all its sockets.

A hint ("call 42 changed", sent after the commit) reaches every queue socket of
every ASGI process. If each socket re-read and rendered the call itself, a
process with 100 sockets would repeat the same queries and renders 100 times,
one after the other in the single thread Channels gives database work: in
bench/fanout.py the median reviewer heard of a call 1.4 s after its commit.

So each process works a hint out once, for all its sockets. The job reads the call from the database and
asks visible_calls() about it once per permission group (reviewers with the
same groups, permissions and flags), not once per reviewer: whether they may
see the call, and their pending count. Then can_decide() is asked for each
reviewer, and the push (the count, the call's row in the triage list and a
toast, as HTML fragments swapped out of band) is rendered once per distinct
panels.viewer_key() and pending count. A page showing the call's full card
re-reads it over HTTP when the row arrives (static/reviewhub/live.js), so the
push stays small.

Each process has one member in the queue group: a listener (started by the
process's first queue socket) gets each hint once from the channel layer and
hands every local socket its user's message, in the order of the hints. With a
member per socket, the layer delivered each hint once per socket (for 100
sockets, 100 Redis messages popped one by one). Hints that come while a job runs wait for the next job,
which works them out together (BATCH at most): the calls read in one query, who sees them asked once per
permission group for all of them, each call still rendered once per distinct view.

The jobs of a process run one after another in a thread of their own, which keeps its database
connection between them (PUSH_CONN_MAX_AGE seconds; dropped before reuse if its server ended it, seen on its socket
without a round trip: runtime/connections.py): a web process otherwise
opens and closes a connection for every piece of database work (CONN_MAX_AGE 0), a few milliseconds of
every push.

This relies on one property of access.visible_calls(): which calls a user may
see depends on their groups, permissions and flags, not on who they are
(tests/approvals/test_live_fanout.py checks it). can_decide() may depend on anything.
"""

import asyncio
import logging
import os
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections
from django.template.loader import render_to_string

from approvals.audit import observers
from approvals.live import QUEUE_GROUP
from approvals.models import ToolCall
from approvals.selectors import sees_calls_and_pending_count, with_key_values
from approvals.web.call_panel import panel_context, viewer_key
from runtime.connections import close_unusable

log = logging.getLogger(__name__)

# What a queue socket sends: out-of-band fragments for htmx's WebSocket extension
# (the count, the call's row, a toast), the same partials the pages render.
PUSH_TEMPLATE = "approvals/partials/live_push.html"

# A socket keeps its user object (and the permissions Django caches on it) at
# most this long before the user is read again; HTTP requests always re-read.
USER_TTL = 30.0
_sockets: dict[int, set] = defaultdict(set)  # user id -> this process's open queue sockets
_users: dict[int, tuple[float, User, tuple]] = {}  # id -> (loaded at, user, permission group); database thread only
_listener: dict = {}  # this process's member of the queue group: loop, channel, task
BATCH = 20  # hints worked out in one job at most: the first of them waits for the job
REJOIN_EVERY = 3600.0  # seconds; the in-memory layer forgets group members after a day (group_expiry)


async def subscribe(consumer, user_id: int) -> None:
    """A queue socket opened: it gets its user's pushes from this process's listener."""
    _sockets[user_id].add(consumer)
    await _ensure_listener(consumer.channel_layer)


def unsubscribe(consumer, user_id: int) -> None:
    _sockets[user_id].discard(consumer)
    if not _sockets[user_id]:
        del _sockets[user_id]


async def _ensure_listener(layer) -> None:
    loop = asyncio.get_running_loop()
    if _listener.get("loop") is loop and not _listener["task"].done():
        return
    if _listener.get("channel"):  # a listener of a loop that ended (tests run a loop per test)
        await layer.group_discard(QUEUE_GROUP, _listener["channel"])
    channel = await layer.new_channel()  # the layer's own kind: it shares the process's one receive loop
    await layer.group_add(QUEUE_GROUP, channel)
    hints: asyncio.Queue[int] = asyncio.Queue()
    _listener.update(
        loop=loop,
        channel=channel,
        hints=hints,
        task=loop.create_task(_listen(layer, channel, hints)),
        pusher=loop.create_task(_push_all(hints)),
    )


async def _listen(layer, channel: str, hints: "asyncio.Queue[int]") -> None:
    """Takes each hint off the channel layer as it comes; _push_all works them out."""
    joined = time.monotonic()
    while True:
        try:
            event = await layer.receive(channel)
            if time.monotonic() - joined > REJOIN_EVERY:
                await layer.group_add(QUEUE_GROUP, channel)
                joined = time.monotonic()
            if event.get("type") == "call.changed":
                hints.put_nowait(event["call_id"])
        except asyncio.CancelledError:
            raise
        except Exception:  # a push is a hint: the page re-reads the database on reconnect
            log.exception("the queue listener failed; it goes on")
            await asyncio.sleep(0.5)


async def _push_all(hints: "asyncio.Queue[int]") -> None:
    """One job for every hint that came while the last job ran (BATCH at most), pushed in the hints' order.

    A job per hint made a hundred calls proposed at once wait for each other's ~6 queries, one job after
    another (bench/agents_waiting.py: the hundredth push came seconds after its proposal's answer)."""
    while True:
        call_ids = [await hints.get()]
        while len(call_ids) < BATCH and not hints.empty():
            call_ids.append(hints.get_nowait())
        try:
            await _dispatch(list(dict.fromkeys(call_ids)))  # a call changed twice is read once, as it is now
        except asyncio.CancelledError:
            raise
        except Exception:  # a push is a hint: the page re-reads the database on reconnect
            log.exception("the queue pushes failed; they go on")


async def _dispatch(call_ids: list[int]) -> None:
    """Each local socket gets its user's message about each of these calls its user may see, in this order."""
    messages = await _run_job(call_ids, list(_sockets))
    for call_id in call_ids:
        for user_id, message in messages.get(call_id, {}).items():
            for consumer in list(_sockets.get(user_id, ())):
                try:
                    await consumer.send(text_data=message)
                except Exception as exc:  # a socket closing as we send: the others still get theirs
                    log.debug("a queue push was not sent: %s", exc)


def _permission_group(user) -> tuple:
    """What the access rules may look at to decide what a user sees."""
    return (
        user.is_active,
        user.is_superuser,
        frozenset(group.pk for group in user.groups.all()),
        frozenset(permission.pk for permission in user.user_permissions.all()),
    )


def _current_users(user_ids) -> list[tuple[User, tuple]]:
    """(user, permission group) for each of these users, re-read when older than USER_TTL."""
    now = time.monotonic()
    stale = [pk for pk in user_ids if pk not in _users or now - _users[pk][0] > USER_TTL]
    if stale:
        for pk in stale:
            _users.pop(pk, None)
        for user in get_user_model().objects.filter(pk__in=stale).prefetch_related("groups", "user_permissions"):
            _users[user.pk] = (now, user, _permission_group(user))
    for pk in set(_users) - set(user_ids):
        del _users[pk]
    return [(_users[pk][1], _users[pk][2]) for pk in user_ids if pk in _users]


def _load_calls(call_ids: list[int]) -> list[ToolCall]:
    calls = (
        ToolCall.objects.select_related("run", "run__requested_by", "review_group", "reviewing_by")
        .prefetch_related(ToolCall.decisions_prefetch())  # can_decide() reads them for each reviewer
        .filter(pk__in=call_ids)
    )
    return with_key_values(sorted(calls, key=lambda call: call_ids.index(call.pk)))


def call_messages(call_id: int, user_ids) -> dict[int, str]:
    """The push (PUSH_TEMPLATE) for each of these users who may see the call, read from the database."""
    return calls_messages([call_id], user_ids).get(call_id, {})


def calls_messages(call_ids: list[int], user_ids) -> dict[int, dict[int, str]]:
    """call_messages() for several calls: read together, and who sees which asked once per permission group."""
    calls = _load_calls(call_ids)
    if not calls:
        return {}
    groups = defaultdict(list)
    for user, permission_group in _current_users(list(user_ids)):
        groups[permission_group].append(user)
    seen = {key: sees_calls_and_pending_count(members[0], call_ids) for key, members in groups.items()}
    browser = observers.browser_notifications([call for call in calls if call.is_pending], user_ids)
    return {call.pk: _messages(call, groups, seen, browser.get(call.pk, {})) for call in calls}


def _messages(call: ToolCall, groups: dict, seen: dict, browser: dict[int, bool]) -> dict[int, str]:
    decision = None if call.is_pending else call.final_decision()
    html_by_view: dict[str, str] = {}
    messages = {}
    for key, members in groups.items():
        visible, pending = seen[key]
        if call.pk not in visible:
            continue
        for user in members:
            context = panel_context(user, call, decision) | {"queue_count": pending}
            context["notify"] = browser.get(user.pk, True)  # the reviewer's preference (toast.html, live.js)
            view = viewer_key(user, context)
            if view not in html_by_view:
                html_by_view[view] = render_to_string(PUSH_TEMPLATE, context | {"user": user})
            messages[user.pk] = html_by_view[view]
    return messages


_push_thread: dict = {}  # this process's thread for the jobs: pid, executor


def _executor() -> ThreadPoolExecutor:
    if _push_thread.get("pid") != os.getpid():  # none yet, or inherited through a fork
        _push_thread.update(pid=os.getpid(), executor=ThreadPoolExecutor(1, thread_name_prefix="live-push"))
    return _push_thread["executor"]


def _in_push_thread(job, *args):
    """Run a job with the push thread's own connection, kept PUSH_CONN_MAX_AGE seconds, dropped when broken."""
    connection = connections[DEFAULT_DB_ALIAS]
    connection.settings_dict = connection.settings_dict | {"CONN_MAX_AGE": settings.PUSH_CONN_MAX_AGE}  # its own copy
    close_unusable()
    try:
        return job(*args)
    finally:
        close_old_connections()


def close_push_connection() -> None:
    """Close the push thread's connection (tests: before the test database is dropped)."""
    if _push_thread.get("pid") == os.getpid():
        _executor().submit(connections.close_all).result()


async def _run_job(call_ids: list[int], user_ids: list[int]) -> dict[int, dict[int, str]]:
    start = time.perf_counter()
    try:
        return await sync_to_async(_in_push_thread, thread_sensitive=False, executor=_executor())(
            calls_messages, call_ids, user_ids
        )
    except Exception:  # a push is a hint: the page re-reads the database on reconnect
        log.exception("rendering the live push for calls %s failed", call_ids)
        return {}
    finally:
        observers.measured("push_fanout", time.perf_counter() - start)
