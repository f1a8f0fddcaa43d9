"""A request slot's kept database connection (runtime/slots.py): reused without a `SELECT 1` before each request,
and replaced when PostgreSQL ended it while it was idle (a restart, an idle timeout), the request answering as
usual."""

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.db.backends.postgresql.base import DatabaseWrapper
from django.db.backends.signals import connection_created

from remote.services import agent_get_or_create
from remote.tokens import token_create
from reviewhub.asgi import application
from runtime import slots
from tests.stack import end_backend_of

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_a_kept_connection_is_not_asked_select_1_and_one_its_server_ended_is_replaced(
    require_postgres, settings, monkeypatch
):
    settings.WEB_REQUEST_SLOTS, settings.WEB_CONN_MAX_AGE = 1, 300
    token = await sync_to_async(lambda: token_create(agent=agent_get_or_create(name="kept")[0])[1])()
    await sync_to_async(connections.close_all)()
    opened: list = []
    connection_created.connect(
        lambda sender, connection, **kwargs: opened.append(connection), weak=False, dispatch_uid="kept-test"
    )
    asked = []  # CONN_HEALTH_CHECKS' SELECT 1
    is_usable = DatabaseWrapper.is_usable
    monkeypatch.setattr(DatabaseWrapper, "is_usable", lambda self: asked.append(self) or is_usable(self))
    transport = httpx.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as http:
            answers = [(await http.get("/api/v1/tools")).status_code for _ in range(2)]
            end_backend_of(opened[0])
            answers += [(await http.get("/api/v1/tools")).status_code for _ in range(2)]
    finally:
        connection_created.disconnect(dispatch_uid="kept-test")
        await slots.close_connections()

    assert answers == [200, 200, 200, 200]
    assert len(opened) == 2  # the first kept for two requests, then its replacement for the next two
    assert asked == []
