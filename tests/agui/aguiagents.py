"""AG-UI agents nobody here wrote, as processes for the tests (examples/agui/*.py), and ReviewHub's side of them
driven as its background task would be (agui.services.run_advance, called here in the test's thread)."""

import json
from pathlib import Path

import pytest

from agents.services import run_start
from agui.models import AguiAgent
from agui.services import agent_save, run_advance
from approvals import services
from tests.stack import ROOT, Processes, free_port, wait_for_http

REQUEST = "Order A-1001 arrived broken. Please refund $490."
SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "reason": {"type": "string", "minLength": 1},
    },
    "required": ["order_id", "amount", "reason"],
}
REFUND_TOOL = {
    "input_schema": SCHEMA,
    "tier": "approval",
    "description": "Refund money to the customer of an order.",
    "description_template": "Refund {amount} on order {order_id} ({reason})",
}


def refund_call(amount=490, order_id="A-1001", call_id=None) -> dict:
    call = {"name": "issue_refund", "arguments": {"order_id": order_id, "amount": amount, "reason": "broken"}}
    return call | ({"id": call_id} if call_id else {})


class AgentServer:
    """One example served on its own port, with its own data folder (refunds.jsonl: what its tool did)."""

    def __init__(self, script: str, data: Path, model_url: str, port: int | None = None):
        self.script, self.data, self.port = ROOT / "examples" / "agui" / script, data, port or free_port()
        data.mkdir(parents=True, exist_ok=True)
        self.processes = Processes(
            {"OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "unused", "EXAMPLE_DATA": str(data)}
        )
        for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "PYTHONPATH"):
            self.processes.env.pop(name, None)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> "AgentServer":
        proc = self.processes.start(str(self.script), str(self.port), log_name=f"agui-{self.script.stem}-{self.port}")
        wait_for_http(self.url.rstrip("/") + "/health" if "langgraph" in self.script.name else self.url, process=proc)
        return self

    def stop(self) -> None:
        self.processes.stop()

    def refunds(self) -> list[dict]:
        path = self.data / "refunds.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def forget_refunds(self) -> None:
        (self.data / "refunds.jsonl").unlink(missing_ok=True)


def serve(script: str, tmp_path_factory, model_url: str):
    server = AgentServer(script, tmp_path_factory.mktemp(Path(script).stem), model_url).start()
    try:
        yield server
    finally:
        server.stop()


def declare(name: str, url: str, **tools) -> AguiAgent:
    return agent_save(agent=AguiAgent(name=name, endpoint_url=url, tools=tools or {"issue_refund": REFUND_TOOL}))


def advance(run, limit: int = 10) -> None:
    """Take the run further as the background task does, until it has nothing to send right now."""
    for _ in range(limit):
        if run_advance(run_id=run.pk) is None:
            run.refresh_from_db()
            return
    pytest.fail("the run kept asking to be taken further")


def start(agent_name: str, requester, model, *replies, request: str = REQUEST):
    """A run of the AG-UI agent `agent_name` on `request`, its model scripted with `replies`, taken as far as it
    goes."""
    model.script(*replies)
    run = run_start(agent_name=agent_name, request=request, requested_by=requester)
    advance(run)
    return run


def decide(call, reviewer, verdict: str, **fields) -> None:
    """A reviewer's decision on the call as it stands now (its hash read again: the stream may have moved it)."""
    call.refresh_from_db()
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, **fields)
