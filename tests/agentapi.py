"""Helpers for the agent API's tests: agents with tokens, a declared refund tool, proposals over HTTP."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from approvals import services
from approvals.models import ToolCall
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


def proposed_in_threads(agent: "AgentClient", count: int) -> list[int]:
    """This many more proposals, each in a thread of its own: the calls' ids."""
    ids = []
    for _ in range(count):
        key = f"{agent.agent.name}-{ToolCall.objects.count()}"
        answer = agent.post("/calls", PROPOSAL | {"idempotency_key": key, "thread_id": key})
        assert answer.status_code == 201, answer.content
        ids.append(answer.json()["id"])
    return ids


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


@pytest.fixture
def caller(db) -> AgentClient:
    """An agent with its refund tool declared and one call proposed (through the test client)."""
    agent = AgentClient("caller")
    agent.declare()
    agent.call_id = agent.propose()["id"]  # type: ignore[attr-defined]
    return agent


# The agent API's webhooks: a receiver on 127.0.0.1 and an agent whose webhook points at it.


class Receiver(BaseHTTPRequestHandler):
    status = 200
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        self.received.append((dict(self.headers), body.decode()))
        self.send_response(self.status)
        if self.status in (301, 302):
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Receiver.received, Receiver.status = [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", Receiver
    server.shutdown()


@pytest.fixture
def hooked(refund_agent, receiver, settings):
    """The agent with a webhook on the local receiver (private addresses allowed, as on one machine)."""
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = True
    response = refund_agent.post("/webhooks", {"url": receiver[0]})
    assert response.status_code == 201, response.json()
    return refund_agent, response.json()


def decide(agent, reviewer, django_capture_on_commit_callbacks) -> ToolCall:
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    return call
