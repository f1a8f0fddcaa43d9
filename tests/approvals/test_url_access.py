"""Every URL × every role, against the table in tests/approvals/access_table.py.

The URLs are read from the URL configuration, the admin's included: a URL with
no row in the table fails here with a message naming it. Every role's request
runs in a savepoint that is rolled back, so each sees the same world; the world
is built once for the module, in a transaction rolled back at its end.
"""

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client

from .access_table import EXPECTED, FORM, GET, POST, ROLES, build_world, http_outcome, http_routes, rule_for

ROUTES = http_routes()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        world = build_world()
        yield world, {role: _session(user) for role, user in world.users.items() if user is not None}
        transaction.set_rollback(True)


def _session(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def answer(session: str | None, method: str, path: str, data: dict) -> int | str:
    """What one role gets, in a savepoint rolled back after it; the role's session is shared, its cookie copied."""
    client = Client()
    if session is not None:
        client.cookies[settings.SESSION_COOKIE_NAME] = session
    with transaction.atomic():
        response = client.get(path) if method == GET else client.post(path, data)
        transaction.set_rollback(True)
    return http_outcome(response)


@pytest.mark.django_db
@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.key)
def test_each_role_gets_what_the_table_says(route, world):
    world, sessions = world
    method, expected = rule_for(route)
    assert method in (GET, POST, FORM), f"{route.key} is an HTTP route; its row says {method}"
    path = world.path(route)
    got = {role: answer(sessions.get(role), method, path, world.post) for role in ROLES}
    assert got == expected, f"{method} {path}"
    if method == POST:
        assert answer(sessions["root"], GET, path, {}) == 405, f"GET {path} should not be allowed"


def test_every_row_of_the_table_is_a_route():
    from .access_table import socket_routes

    routes = {route.key for route in ROUTES} | {route.key for route in socket_routes()}
    assert set(EXPECTED) - routes == set(), "rows for routes that no longer exist"
