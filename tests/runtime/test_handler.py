"""A request to a sync view runs Django's sync middleware chain in one hop to its slot's thread; a request to
an async view (a long-poll) the async chain (tests/remote/test_api_waiting.py: it gives its slot back); a
request to the agent API, sync or async, the API's middleware only (tests/remote/test_api_middleware.py: the
same answers, and what a cookie does there)."""

import httpx
import pytest
from asgiref import sync
from django.conf import settings
from django.urls import get_resolver
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string

from reviewhub.asgi import application
from runtime.handler import view_is_async
from runtime.inloop import InLoop


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


@pytest.fixture
def middleware_run(monkeypatch) -> list:
    """The class of every MiddlewareMixin middleware a request goes through while the test runs (Django's own
    are all MiddlewareMixin; WhiteNoise's and django-htmx's, which are not, are in no chain without them)."""
    ran: list = []
    original = MiddlewareMixin.__call__

    def recorded(self, request):
        ran.append(type(self))
        return original(self, request)

    monkeypatch.setattr(MiddlewareMixin, "__call__", recorded)
    return ran


async def _get(path: str, **headers: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as http:
        return await http.get(path)


def _api_middleware() -> list:
    return [import_string(path) for path in settings.API_MIDDLEWARE]


@pytest.mark.asyncio
async def test_a_sync_views_request_hops_to_a_thread_once_for_the_whole_middleware_chain(hops):
    answer = await _get("/healthz")

    assert answer.status_code == 200
    assert answer.headers["X-Frame-Options"] == "DENY" and "Content-Security-Policy" in answer.headers  # the chain ran
    assert len(hops) == 3  # request_started's receivers; the chain with its view; the response's close (Django's)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_an_api_request_to_a_sync_view_runs_only_the_api_middleware_in_one_hop(caller, hops, middleware_run):
    answer = await _get("/api/v1/tools", Authorization=f"Bearer {caller.token}")

    assert answer.status_code == 200 and answer.json()[0]["name"] == "issue_refund"
    assert answer.headers["X-Frame-Options"] == "DENY" and "Content-Security-Policy" in answer.headers
    assert middleware_run == _api_middleware()
    assert len(hops) == 3


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_long_poll_runs_only_the_api_middleware_with_its_hooks_in_the_event_loop(
    caller, hops, middleware_run
):
    answer = await _get(f"/api/v1/calls/{caller.call_id}?wait=0.01", Authorization=f"Bearer {caller.token}")

    assert answer.status_code == 200 and answer.json()["status"] == "pending"
    assert answer.headers["X-Frame-Options"] == "DENY" and "Content-Security-Policy" in answer.headers
    assert answer.headers["X-Content-Type-Options"] == "nosniff"  # SecurityMiddleware's
    assert [base for kind in middleware_run for base in kind.__mro__ if base in _api_middleware()] == _api_middleware()
    assert all(issubclass(kind, InLoop) for kind in middleware_run)  # runtime/inloop.py
    # request_started; the token; the read when it starts and the one when its wait runs out; the response's
    # close (with Django's MiddlewareMixin the middleware's 7 more: security 2, common 2, X-Frame-Options 1, CSP 2)
    assert len(hops) == 5


@pytest.mark.asyncio
async def test_in_the_event_loop_the_api_middleware_still_refuses_a_host_not_allowed():
    answer = await _get("/api/v1/calls/1?wait=1", Host="evil.example")

    assert answer.status_code == 400  # CommonMiddleware's Host check, before the token is read


def test_the_long_poll_is_the_async_view_and_the_others_are_not():
    assert view_is_async("/api/v1/calls/1")
    assert not view_is_async("/api/v1/calls") and not view_is_async("/api/v1/tools")
    assert not view_is_async("/no/such/page/")  # the sync chain answers the 404


def test_only_the_agent_api_lives_under_the_api_prefix():
    """Under /api/ nothing reads a session or checks CSRF: no page of the site may be put there."""
    under_api = [pattern for pattern in get_resolver().url_patterns if str(pattern.pattern).startswith("api")]

    assert [(str(pattern.pattern), pattern.namespace) for pattern in under_api] == [("api/v1/", "api-v1")]


def test_the_api_middleware_is_the_sites_less_what_a_token_api_does_not_use():
    assert [path for path in settings.MIDDLEWARE if path in settings.API_MIDDLEWARE] == settings.API_MIDDLEWARE
    assert "django.middleware.security.SecurityMiddleware" in settings.API_MIDDLEWARE
    assert "django.middleware.common.CommonMiddleware" in settings.API_MIDDLEWARE  # the Host check
