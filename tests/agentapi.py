"""Helpers for the agent API's tests: agents with tokens, a declared refund tool, proposals over HTTP."""

import json

import pytest
from django.test import Client

from remote import services as remote_services
from remote.tokens import token_create

REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "maxLength": 20},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "reason": {"type": "string"},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
REFUND_TOOL = {
    "description": "Refund money to the customer of an order.",
    "input_schema": REFUND_SCHEMA,
    "tier": "approval",
    "description_template": "Refund ${amount} on order {order_id}",
    "key_fields": ["amount", "order_id"],
}
PROPOSAL = {
    "thread_id": "support-4711",
    "tool": "issue_refund",
    "arguments": {"order_id": "A-1001", "amount": 490, "reason": "arrived broken"},
    "reasoning": "The customer says the order arrived broken.",
    "user_request": "Order A-1001 arrived broken. Please refund $490.",
    "facts": {"order_total": "$49.00"},
    "idempotency_key": "4711-1",
}


class AgentClient:
    """An agent speaking the API with its token (and nothing else: no session)."""

    def __init__(self, name: str):
        self.agent, _ = remote_services.agent_get_or_create(name=name)
        self.token_row, self.token = token_create(agent=self.agent)
        self.http = Client(HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def put(self, path: str, body):
        return self.http.put(f"/api/v1{path}", _json(body), content_type="application/json")

    def post(self, path: str, body):
        return self.http.post(f"/api/v1{path}", _json(body), content_type="application/json")

    def get(self, path: str):
        return self.http.get(f"/api/v1{path}")

    def declare(self, name: str = "issue_refund", **changes):
        response = self.put(f"/tools/{name}", REFUND_TOOL | changes)
        assert response.status_code == 200, response.json()
        return response.json()

    def propose(self, **changes) -> dict:
        response = self.post("/calls", PROPOSAL | changes)
        assert response.status_code in (200, 201), response.json()
        return response.json()


def _json(body) -> str | bytes:
    return body if isinstance(body, str | bytes) else json.dumps(body)


@pytest.fixture
def agent(db):
    return AgentClient("support-bot")


@pytest.fixture
def other_agent(db):
    return AgentClient("other-bot")


@pytest.fixture
def refund_agent(agent):
    """An agent that declared issue_refund."""
    agent.declare()
    return agent
