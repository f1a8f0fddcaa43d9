"""Who may open a socket, through the real ASGI application: the page's origin
(scheme, host and port), the login, and the run the socket is about."""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group

from approvals import services
from approvals.models import ToolSetting
from reviewhub.asgi import application
from tests.livestack import session_cookie
from tests.reviewing import REFUND_CALL, run_with

from .access_table import OPEN, ROLES, SHUT, WS, build_world, rule_for, socket_routes

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("async_connections_closed"),
]


async def opens(path, user=None, *, origin="http://testserver", host="testserver", scheme=None) -> bool:
    """Whether the socket is accepted; a refusal must be a clean close, never an error."""
    headers = [(b"host", host.encode())]
    if origin:
        headers.append((b"origin", origin.encode()))
    if user is not None:
        headers.append((b"cookie", (await sync_to_async(session_cookie)(user)).encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    if scheme:
        communicator.scope["scheme"] = scheme
    accepted, _ = await communicator.connect()
    if accepted:
        await communicator.disconnect()
    return accepted


@pytest.fixture
def restricted_run(shop, requester):
    """A run with a refund only the group "senior" may see."""
    ToolSetting.objects.create(tool_name="issue_refund", group=Group.objects.get(name="senior"))
    return run_with(requester, REFUND_CALL)


async def test_a_socket_from_another_port_or_scheme_of_the_same_host_is_refused(reviewer):
    assert await opens("/ws/queue/", reviewer)
    assert not await opens("/ws/queue/", reviewer, origin="http://testserver:9999")
    assert not await opens("/ws/queue/", reviewer, origin="https://testserver")
    assert not await opens("/ws/queue/", reviewer, origin="http://testserver.evil.example")


async def test_a_socket_opened_over_tls_accepts_only_the_https_origin(reviewer):
    assert await opens("/ws/queue/", reviewer, origin="https://testserver", scheme="wss")
    assert not await opens("/ws/queue/", reviewer, origin="http://testserver", scheme="wss")


async def test_the_origin_port_must_match_the_host_port(reviewer):
    assert await opens("/ws/queue/", reviewer, origin="http://127.0.0.1:8000", host="127.0.0.1:8000")
    assert await opens("/ws/queue/", reviewer, origin="http://127.0.0.1", host="127.0.0.1:80")
    assert not await opens("/ws/queue/", reviewer, origin="http://127.0.0.1:9999", host="127.0.0.1:8000")


async def test_a_host_the_site_does_not_serve_is_refused_even_from_its_own_origin(reviewer):
    # DNS rebinding: a page on evil.example whose name now points at this server.
    assert not await opens("/ws/queue/", reviewer, origin="http://evil.example", host="evil.example")


async def test_an_origin_in_csrf_trusted_origins_is_accepted(reviewer, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://reviewhub.example.com", "https://*.review.example"]
    assert await opens("/ws/queue/", reviewer, origin="https://reviewhub.example.com")
    assert await opens("/ws/queue/", reviewer, origin="https://eu.review.example")
    assert not await opens("/ws/queue/", reviewer, origin="http://reviewhub.example.com")
    assert not await opens("/ws/queue/", reviewer, origin="https://reviewhub.example.com:8443")


async def test_an_unknown_socket_path_is_refused_cleanly(reviewer):
    for path in ("/ws/other/", "/ws/runs/-1/", "/ws/runs/abc/", "/ws/queue/extra/", "/"):
        assert not await opens(path, reviewer), path


async def test_the_run_socket_is_refused_to_who_may_not_see_the_run(
    restricted_run, requester, reviewer, outsider, auditor, senior
):
    path = f"/ws/runs/{restricted_run.pk}/"
    assert not await opens(path, outsider)
    assert not await opens(path, reviewer)  # outside the group of the run's refund
    assert not await opens(f"/ws/runs/{restricted_run.pk + 1000}/", senior)
    for user in (requester, senior, auditor):
        assert await opens(path, user), user


async def test_a_requester_without_review_permission_watches_their_own_run(shop, outsider):
    run = await sync_to_async(services.run_create)(agent="support", request="Help.", requested_by=outsider)
    assert await opens(f"/ws/runs/{run.pk}/", outsider)


# --- every socket route × every role, against the table in tests/approvals/access_table.py --------------------


@pytest.mark.parametrize("route", socket_routes(), ids=lambda route: route.key)
async def test_each_role_gets_what_the_table_says_of_a_socket(route):
    method, expected = rule_for(route)
    assert method == WS, f"{route.key} is a socket route; its row says {method}"
    world = await sync_to_async(build_world)()
    path = world.path(route) if route.key != ".*" else "/ws/other/"
    got = {role: OPEN if await opens(path, world.users[role]) else SHUT for role in ROLES}
    assert got == expected, path
