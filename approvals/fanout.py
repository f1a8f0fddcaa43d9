"""Live queue pushes, worked out once per ASGI process for all its sockets.

A hint ("call 42 changed", sent after the commit) reaches every queue socket of
every ASGI process. If each socket re-read and rendered the call itself, a
process with 100 sockets would repeat the same queries and renders 100 times,
one after the other in the single thread Channels gives database work: in
bench/fanout.py the median reviewer heard of a call 1.4 s after its commit.

So the first socket of a process to get a hint starts one job, and the process's
other sockets await the same job. The job reads the call from the database and
asks visible_calls() about it once per permission group (reviewers with the
same groups, permissions and flags), not once per reviewer: whether they may
see the call, and their pending count. Then can_decide() is asked for each
reviewer, and the push (the count, the call panel and a toast, as HTML
fragments swapped out of band) is rendered once per distinct
panels.viewer_key() and pending count. Each socket sends its own user's push.

This relies on one property of access.visible_calls(): which calls a user may
see depends on their groups, permissions and flags, not on who they are
(tests/test_live_fanout.py checks it). can_decide() may depend on anything.
"""

import asyncio
import logging
import time
import uuid
from collections import Counter, defaultdict

from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.template.loader import render_to_string

from . import observers
from .models import ToolCall
from .panels import panel_context, viewer_key
from .selectors import sees_call_and_pending_count

log = logging.getLogger(__name__)

# What a queue socket sends: out-of-band fragments for htmx's WebSocket extension
# (the count, the call panel, a toast), the same partials the pages render.
PUSH_TEMPLATE = "approvals/partials/live_push.html"

# A socket keeps its user object (and the permissions Django caches on it) at
# most this long before the user is read again; HTTP requests always re-read.
USER_TTL = 30.0
# A job's result is kept this long for the sockets of this process that are slow
# to get the hint; a socket later than that starts a fresh job.
JOB_TTL = 5.0

_viewers: Counter = Counter()  # user id -> open queue sockets in this process
_users: dict[int, tuple[float, object, tuple]] = {}  # id -> (loaded at, user, permission group); database thread only
_jobs: dict[str, asyncio.Future] = {}


def join(user_id: int) -> None:
    _viewers[user_id] += 1


def leave(user_id: int) -> None:
    _viewers[user_id] -= 1
    if _viewers[user_id] <= 0:
        del _viewers[user_id]


def _permission_group(user) -> tuple:
    """What the access rules may look at to decide what a user sees."""
    return (
        user.is_active,
        user.is_superuser,
        frozenset(group.pk for group in user.groups.all()),
        frozenset(permission.pk for permission in user.user_permissions.all()),
    )


def _current_users(user_ids) -> list[tuple[object, tuple]]:
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
    return [_users[pk][1:] for pk in user_ids if pk in _users]


def _load_call(call_id: int) -> ToolCall | None:
    return (
        ToolCall.objects.select_related("run", "run__requested_by", "review_group", "reviewing_by")
        .prefetch_related("decisions")  # can_decide() reads them for each reviewer
        .filter(pk=call_id)
        .first()
    )


def call_messages(call_id: int, user_ids) -> dict[int, str]:
    """The push (PUSH_TEMPLATE) for each of these users who may see the call, read from the database."""
    call = _load_call(call_id)
    if call is None:
        return {}
    decision = call.final_decision()
    groups = defaultdict(list)
    for user, permission_group in _current_users(list(user_ids)):
        groups[permission_group].append(user)
    html_by_view: dict[str, str] = {}
    messages = {}
    browser = observers.browser_notifications(call, user_ids) if call.is_pending else {}
    for members in groups.values():
        sees, pending = sees_call_and_pending_count(members[0], call_id)
        if not sees:
            continue
        for user in members:
            # Pushed panels go to the queue page mostly: they carry its batch checkbox.
            context = panel_context(user, call, decision) | {"in_queue": True, "queue_count": pending}
            context["notify"] = browser.get(user.pk, True)  # the reviewer's preference (toast.html, live.js)
            view = viewer_key(user, context)
            if view not in html_by_view:
                html_by_view[view] = render_to_string(PUSH_TEMPLATE, context | {"user": user})
            messages[user.pk] = html_by_view[view]
    return messages


async def _run_job(call_id: int, user_ids: list[int]) -> dict[int, str]:
    start = time.perf_counter()
    try:
        return await database_sync_to_async(call_messages)(call_id, user_ids)
    except Exception:  # a push is a hint: the page re-reads the database on reconnect
        log.exception("rendering the live push for call %s failed", call_id)
        return {}
    finally:
        observers.measured("push_fanout", time.perf_counter() - start)


async def message_for(user_id: int, event: dict) -> str | None:
    """This user's message for a "call.changed" hint, or None if they may not see the call."""
    key = event.get("hint") or uuid.uuid4().hex
    job = _jobs.get(key)
    if job is None:
        job = asyncio.ensure_future(_run_job(event["call_id"], list(_viewers)))
        _jobs[key] = job
        asyncio.get_running_loop().call_later(JOB_TTL, _jobs.pop, key, None)
    messages = await asyncio.shield(job)  # a socket closing must not cancel the others' job
    return messages.get(user_id)
