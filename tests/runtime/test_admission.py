"""A new proposal that would wait longer than WEB_QUEUE_LIMIT_SECONDS for a request slot is turned away at once
with 503 and Retry-After (runtime/admission.py); reviewhub_client sends it again after that wait."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from runtime import slots

pytestmark = pytest.mark.asyncio


class Sent:
    """An ASGI `send` that keeps the response's status, headers and body."""

    def __init__(self):
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = b""

    async def __call__(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {name.decode(): value.decode() for name, value in message["headers"]}
        else:
            self.body += message.get("body", b"")


def request(app, path: str, method: str = "POST") -> tuple[asyncio.Task, Sent]:
    sent = Sent()
    scope = {"type": "http", "path": path, "method": method}
    return asyncio.create_task(slots.limited(app)(scope, None, sent)), sent


async def test_a_proposal_that_would_wait_too_long_is_turned_away_and_what_finishes_work_is_not(settings):
    settings.WEB_REQUEST_SLOTS, settings.WEB_QUEUE_LIMIT_SECONDS = 1, 0.5
    go_on = asyncio.Event()
    seen: list[str] = []

    async def app(scope, receive, send):
        seen.append(scope["path"])
        if scope["path"] == "/timed":
            await asyncio.sleep(0.3)  # a write that held its slot 0.3 s: the pool's mean
        else:
            await go_on.wait()

    timed, _ = request(app, "/timed")
    await asyncio.wait_for(timed, 30)
    held, _ = request(app, "/api/v1/calls")  # at work in the one slot
    waiting, _ = request(app, "/api/v1/calls")  # waits 0.3 s: within the limit
    await asyncio.sleep(0.05)
    turned_away, answer = request(app, "/api/v1/calls")  # would wait 0.6 s
    await asyncio.wait_for(turned_away, 30)
    let_in = [request(app, path)[0] for path in ("/api/v1/calls/7/result", "/api/v1/calls/7/claim")]
    read, _ = request(app, "/api/v1/calls", method="GET")
    await asyncio.sleep(0.05)

    assert answer.status == 503 and answer.headers["retry-after"] == "1"
    assert "busy" in json.loads(answer.body)["detail"]
    assert seen == ["/timed", "/api/v1/calls"]  # the one turned away never reached the app
    go_on.set()
    await asyncio.wait_for(asyncio.gather(held, waiting, read, *let_in), 30)
    let_in_paths = ["/api/v1/calls/7/result", "/api/v1/calls/7/claim"]
    assert sorted(seen) == sorted(["/timed", *["/api/v1/calls"] * 3, *let_in_paths])


async def test_no_limit_turns_nothing_away(settings):
    settings.WEB_REQUEST_SLOTS, settings.WEB_QUEUE_LIMIT_SECONDS = 1, 0
    go_on = asyncio.Event()

    async def app(scope, receive, send):
        await go_on.wait()

    tasks = [request(app, "/api/v1/calls") for _ in range(5)]
    await asyncio.sleep(0.05)
    go_on.set()
    await asyncio.wait_for(asyncio.gather(*(task for task, _ in tasks)), 30)
    assert all(sent.status is None for _, sent in tasks)  # the app answered nothing; nobody was turned away


@pytest.mark.django_db(transaction=True)
async def test_the_client_sends_a_turned_away_proposal_again_and_it_becomes_one_call(settings, monkeypatch):
    """End to end: the ASGI application and reviewhub_client, the server busy for the first send."""
    import httpx2
    from django.db import connections
    from reviewhub_client import AsyncReviewHub, _api

    from approvals.models import ToolCall
    from remote.services import agent_get_or_create
    from remote.tokens import token_create
    from reviewhub.asgi import application

    settings.WEB_REQUEST_SLOTS, settings.WEB_QUEUE_LIMIT_SECONDS = 2, 2.0
    token = await sync_to_async(lambda: token_create(agent=agent_get_or_create(name="turned-away")[0])[1])()
    busy = iter([5.0])  # the first proposal would wait 5 s; then the line is empty
    monkeypatch.setattr(slots._Pool, "expected_wait", lambda pool: next(busy, 0.0))
    waits: list[float] = []
    monkeypatch.setattr(_api, "busy_wait", lambda seconds: waits.append(seconds) or 0.01)
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    transport = httpx2.ASGITransport(app=application)
    try:
        async with AsyncReviewHub("http://testserver", token, transport=transport) as hub:
            await hub.declare_tool("issue_refund", input_schema=schema)
            call = await hub.propose(
                thread_id="t-1", tool="issue_refund", arguments={"order_id": "A-1"}, idempotency_key="k-1"
            )
            calls = await sync_to_async(ToolCall.objects.filter(pk=call.id).count)()
    finally:
        await slots.close_connections()
        await sync_to_async(connections.close_all)()  # the test's own thread's, before the database is dropped

    assert waits == [5.0]  # turned away once, asked to wait 5 s
    assert call.status == "pending" and calls == 1


async def test_retry_after_is_the_expected_wait_in_whole_seconds_within_bounds(settings):
    from runtime import admission

    settings.WEB_QUEUE_LIMIT_SECONDS = 2.0
    assert [admission.retry_after(wait) for wait in (0.5, 2.0, 2.1, 4.5, 600)] == [None, None, 3, 5, 10]
    settings.WEB_QUEUE_LIMIT_SECONDS = 0
    assert admission.retry_after(600) is None
