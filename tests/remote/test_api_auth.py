"""The agent API's tokens: made by a command and shown once, stored hashed, revocable, one agent's only."""

import hashlib
import io

from django.core.management import call_command
from django.test import Client

from remote.models import AgentToken, RemoteAgent
from remote.tokens import token_revoke
from tests.agentapi import PROPOSAL


def test_create_agent_token_prints_a_token_once_and_stores_only_its_digest(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_agent_token", "billing-bot", stdout=out, stderr=err)

    token = out.getvalue().strip()
    row = AgentToken.objects.get(agent__name="billing-bot")
    assert token.startswith("rh_") and len(token) > 40
    assert row.digest == hashlib.sha256(token.encode()).hexdigest()
    assert row.prefix == token[:11] and token not in err.getvalue()
    assert not AgentToken.objects.filter(digest=token).exists()
    assert RemoteAgent.objects.get(name="billing-bot").user.has_usable_password() is False


def test_the_token_works_for_its_agent(refund_agent):
    response = refund_agent.get("/tools")

    assert response.status_code == 200
    assert [tool["name"] for tool in response.json()] == ["issue_refund"]


def test_a_revoked_token_is_refused(refund_agent):
    token_revoke(token=refund_agent.token_row)

    response = refund_agent.get("/tools")

    assert response.status_code == 401
    assert response.json() == {"detail": response.json()["detail"], "errors": {}}


def test_a_made_up_token_is_refused(db):
    response = Client(HTTP_AUTHORIZATION="Bearer rh_not-a-token").get("/api/v1/tools")
    assert response.status_code == 401


def test_a_session_cookie_alone_is_refused_even_for_a_superuser(db, django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root"))

    assert client.get("/api/v1/tools").status_code == 401
    assert client.post("/api/v1/calls", {}, content_type="application/json").status_code == 401


def test_a_token_sees_only_its_own_agents_tools(refund_agent, other_agent):
    assert other_agent.get("/tools").json() == []


def test_another_agents_call_is_not_found(refund_agent, other_agent):
    call = refund_agent.propose()

    assert other_agent.get(f"/calls/{call['id']}").status_code == 404
    claim = other_agent.post(f"/calls/{call['id']}/claim", {"execution_key": "ek_x"})
    assert claim.status_code == 404
    report = other_agent.post(f"/calls/{call['id']}/result", {"execution_key": "ek_x", "ok": True, "output": ""})
    assert report.status_code == 404


def test_an_agents_own_tool_names_are_its_own(refund_agent, other_agent):
    """Another agent proposing a tool of the same name that it never declared gets 404, not the first's tool."""
    response = other_agent.post("/calls", PROPOSAL)
    assert response.status_code == 404
