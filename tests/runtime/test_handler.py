"""A request to a sync view runs Django's sync middleware chain in one hop to its slot's thread; a request to
an async view (a long-poll) the async chain (tests/remote/test_api_waiting.py: it gives its slot back)."""

import httpx
import pytest
from asgiref import sync

from reviewhub.asgi import application
from runtime.handler import view_is_async


@pytest.fixture
def hops(monkeypatch) -> list:
    """Every hop from the event loop to a thread (sync_to_async) while the test runs."""
    made: list = []
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        made.append(self.func)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    return made


@pytest.mark.asyncio
async def test_a_sync_views_request_hops_to_a_thread_once_for_the_whole_middleware_chain(hops):
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        answer = await http.get("/healthz")

    assert answer.status_code == 200
    assert answer.headers["X-Frame-Options"] == "DENY" and "Content-Security-Policy" in answer.headers  # the chain ran
    assert len(hops) == 3  # request_started's receivers; the chain with its view; the response's close (Django's)


def test_the_long_poll_is_the_async_view_and_the_others_are_not():
    assert view_is_async("/api/v1/calls/1")
    assert not view_is_async("/api/v1/calls") and not view_is_async("/api/v1/tools")
    assert not view_is_async("/no/such/page/")  # the sync chain answers the 404
