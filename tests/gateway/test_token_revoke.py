"""A leaked agent token is revoked from the admin's changelist action, by who may revoke (approvals/access/);
from then on every agent API endpoint and the MCP gateway answer it 401."""

import asyncio
import re

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.db import connections
from django.test import Client
from django.urls import URLResolver, get_resolver

from gateway import services as gateway_services
from gateway.http import mcp_app
from remote.models import AgentToken
from remote.tokens import token_create
from tests.agentapi import AgentClient

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}


def _filled(pattern: str) -> str:
    return re.sub(r"<(?:\w+:)?call_id>", "1", re.sub(r"<(?:\w+:)?name>", "issue_refund", pattern))


def _api_paths() -> list[str]:
    """Every route of the agent API but its public description, with its parameters filled in."""
    (api,) = [
        entry for entry in get_resolver().url_patterns if isinstance(entry, URLResolver) and "api" in str(entry.pattern)
    ]
    paths = []
    for entry in api.url_patterns:
        pattern = str(entry.pattern)
        if "openapi" in pattern or entry.name == "api-root" or pattern in ("", "docs"):
            continue
        paths.append("/" + str(api.pattern) + _filled(pattern))
    return paths


def _answers(token: str, path: str) -> set[int]:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    statuses = {
        client.generic(method, path, "{}", content_type="application/json").status_code
        for method in ("GET", "POST", "PUT")
    }
    return statuses - {405}


def _mcp_status(token: str) -> int:
    async def initialize() -> int:
        transport = httpx.ASGITransport(app=mcp_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
            status = (await client.post("/mcp/revoked-gw/", json=INITIALIZE, headers=headers)).status_code
        await sync_to_async(connections.close_all)()
        return status

    return asyncio.run(initialize())


def _revoke_from_the_changelist(user, token_row) -> int:
    client = Client()
    client.force_login(user)
    response = client.post(
        "/admin/remote/agenttoken/", {"action": "revoke", "_selected_action": [token_row.pk], "index": 0}
    )
    return response.status_code


def test_a_superuser_revokes_a_token_from_the_changelist_and_every_endpoint_then_answers_401(django_user_model):
    agent = AgentClient("leaky-bot")
    agent.declare()
    api_paths = _api_paths()
    assert len(api_paths) >= 7, api_paths
    assert any(status < 400 for path in api_paths for status in _answers(agent.token, path))

    status = _revoke_from_the_changelist(django_user_model.objects.create_superuser("root"), agent.token_row)

    assert status == 302
    assert AgentToken.objects.get(pk=agent.token_row.pk).revoked_at is not None
    for path in api_paths:
        assert _answers(agent.token, path) == {401}, path


def test_a_revoked_token_of_a_gateways_agent_is_refused_by_the_mcp_gateway(django_user_model):
    gateway = gateway_services.gateway_create(name="revoked-gw")
    token_row, token = token_create(agent=gateway.agent)
    assert _mcp_status(token) != 401

    _revoke_from_the_changelist(django_user_model.objects.create_superuser("root"), token_row)

    assert _mcp_status(token) == 401


def test_the_revoke_action_is_offered_to_a_superuser_and_not_to_an_auditor_even_a_superuser(django_user_model):
    agent = AgentClient("other-leaky-bot")
    root = django_user_model.objects.create_superuser("root")
    auditor = django_user_model.objects.create_superuser("audrey")
    auditor.groups.add(Group.objects.get_or_create(name="auditors")[0])
    pages = {}
    for user in (root, auditor):
        client = Client()
        client.force_login(user)
        pages[user.username] = client.get("/admin/remote/agenttoken/").content.decode()

    _revoke_from_the_changelist(auditor, agent.token_row)

    assert 'value="revoke"' in pages["root"]
    assert 'value="revoke"' not in pages["audrey"]
    assert AgentToken.objects.get(pk=agent.token_row.pk).revoked_at is None
