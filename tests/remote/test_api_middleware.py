"""The agent API through the ASGI app runs its own middleware (settings.API_MIDDLEWARE, runtime/handler.py): its
answers, errors included, are the ones the site's middleware gave; a session cookie authenticates nothing there;
the site's forms are still guarded by CSRF."""

import httpx
import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import Client

from remote import api, http
from reviewhub.asgi import application
from runtime.handler import Handler
from tests.agentapi import PROPOSAL

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def session_cookies(db, django_user_model) -> dict:
    """A superuser's session and CSRF cookies, as a browser logged in to the site holds them."""
    browser = Client()
    browser.force_login(django_user_model.objects.create_superuser("root"))
    browser.get("/login/")  # sets the CSRF cookie
    return {name: morsel.value for name, morsel in browser.cookies.items()}


@pytest_asyncio.fixture
async def closed_at_the_end():
    yield
    await sync_to_async(connections.close_all)()  # asgiref's thread's, before the database is dropped


async def _send(app, method: str, path: str, **kwargs) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.request(method, path, **kwargs)


def _answer(response: httpx.Response) -> tuple:
    return response.status_code, sorted(response.headers.items()), response.content


def _requests(caller) -> list[tuple]:
    token = {"Authorization": f"Bearer {caller.token}"}
    bad = {"content": b"{not json", "headers": token | {"Content-Type": "application/json"}}
    return [
        ("GET", "/api/v1/tools", {"headers": token}),
        ("GET", f"/api/v1/calls/{caller.call_id}", {"headers": token}),
        ("GET", f"/api/v1/calls/{caller.call_id}?wait=0.01", {"headers": token}),
        ("GET", "/api/v1/calls/999999", {"headers": token}),  # 404, the API's JSON
        ("GET", "/api/v1/no-such-thing", {"headers": token}),  # 404, Django's page
        ("GET", "/api/v1/calls/0", {"headers": token}),  # 422
        ("DELETE", "/api/v1/tools", {"headers": token}),  # 405
        ("POST", "/api/v1/calls", bad),  # 400
        ("POST", "/api/v1/calls", {"headers": token, "json": {}}),  # 422
        ("POST", "/api/v1/calls", {"json": PROPOSAL}),  # 401
        ("GET", "/api/v1/tools", {"headers": {"Authorization": "Bearer rh_made-up"}}),  # 401
        ("GET", "/api/v1/tools", {"headers": token | {"Host": "evil.example"}}),  # 400, not an allowed host
        ("GET", "/api/v1/openapi.json", {}),
    ]


async def test_every_answer_is_the_one_the_sites_middleware_gave(caller, settings, closed_at_the_end):
    settings.API_MIDDLEWARE = settings.MIDDLEWARE
    through_the_sites = Handler()

    for method, path, options in _requests(caller):
        site = await _send(through_the_sites, method, path, **options)
        ours = await _send(application, method, path, **options)
        assert _answer(ours) == _answer(site), (method, path)


async def test_the_docs_page_is_the_same_and_no_longer_varies_with_a_cookie(settings, closed_at_the_end):
    """Through the site's chain, rendering it touched the session (the template context's user): Vary: Cookie."""
    settings.API_MIDDLEWARE = settings.MIDDLEWARE
    site = await _send(Handler(), "GET", "/api/v1/docs")
    ours = await _send(application, "GET", "/api/v1/docs")

    assert site.headers["Vary"] == "Cookie" and "vary" not in ours.headers
    del site.headers["Vary"]
    assert ours.status_code == 200 and _answer(ours) == _answer(site)


async def test_a_server_error_is_the_one_the_sites_middleware_gave(caller, settings, monkeypatch, closed_at_the_end):
    def broken(user, tools):
        raise RuntimeError("a bug")

    monkeypatch.setattr(api.access, "agent_tools", broken)
    settings.API_MIDDLEWARE = settings.MIDDLEWARE
    through_the_sites = Handler()
    token = {"Authorization": f"Bearer {caller.token}"}

    site = await _send(through_the_sites, "GET", "/api/v1/tools", headers=token)
    ours = await _send(application, "GET", "/api/v1/tools", headers=token)

    assert ours.status_code == 500 and _answer(ours) == _answer(site)


async def test_a_session_cookie_alone_gets_what_no_cookie_gets(caller, session_cookies, closed_at_the_end):
    for method, path, options in [
        ("GET", "/api/v1/tools", {}),
        ("GET", f"/api/v1/calls/{caller.call_id}?wait=0.01", {}),
        ("POST", "/api/v1/calls", {"json": PROPOSAL}),
        ("POST", f"/api/v1/calls/{caller.call_id}/claim", {"json": {"execution_key": "k"}}),
    ]:
        with_cookie = await _send(application, method, path, cookies=session_cookies, **options)
        without = await _send(application, method, path, **options)
        assert with_cookie.status_code == 401 and _answer(with_cookie) == _answer(without), (method, path)


async def test_a_session_cookie_beside_a_token_changes_nothing(caller, session_cookies, closed_at_the_end):
    token = {"Authorization": f"Bearer {caller.token}"}
    for path in ["/api/v1/tools", f"/api/v1/calls/{caller.call_id}", f"/api/v1/calls/{caller.call_id}?wait=0.01"]:
        with_cookie = await _send(application, "GET", path, headers=token, cookies=session_cookies)
        without = await _send(application, "GET", path, headers=token)
        assert with_cookie.status_code == 200 and _answer(with_cookie) == _answer(without), path
        assert "set-cookie" not in with_cookie.headers and "vary" not in with_cookie.headers


async def test_no_api_request_has_the_sites_user_or_session(caller, session_cookies, monkeypatch, closed_at_the_end):
    """Stricter than the site's chain, where both were there unread: no view under /api/ can use them."""
    seen: list = []
    sync_check, async_check = http.TokenAuth.authenticate, http.AsyncTokenAuth.authenticate

    def sync_seen(self, request, token):
        seen.append((hasattr(request, "user"), hasattr(request, "session")))
        return sync_check(self, request, token)

    async def async_seen(self, request, token):
        seen.append((hasattr(request, "user"), hasattr(request, "session")))
        return await async_check(self, request, token)

    monkeypatch.setattr(http.TokenAuth, "authenticate", sync_seen)
    monkeypatch.setattr(http.AsyncTokenAuth, "authenticate", async_seen)
    token = {"Authorization": f"Bearer {caller.token}"}

    assert (await _send(application, "GET", "/api/v1/tools", headers=token, cookies=session_cookies)).is_success
    path = f"/api/v1/calls/{caller.call_id}?wait=0.01"
    assert (await _send(application, "GET", path, headers=token, cookies=session_cookies)).is_success
    assert seen == [(False, False), (False, False)]


async def test_a_browser_post_without_its_csrf_token_is_still_refused(session_cookies, closed_at_the_end):
    refused = await _send(application, "POST", "/logout/", cookies=session_cookies)
    allowed = await _send(
        application, "POST", "/logout/", cookies=session_cookies, headers={"X-CSRFToken": session_cookies["csrftoken"]}
    )

    assert refused.status_code == 403 and b"CSRF" in refused.content
    assert allowed.status_code == 302
