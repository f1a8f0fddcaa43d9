"""The three frameworks for real (LangGraph/LangChain, the OpenAI Agents SDK, Pydantic AI): each example runs
as its own processes against ReviewHub (uvicorn on the test database) and the scripted model server
(`python manage.py model_server`), both real processes; a reviewer decides through the call page's forms."""

import json
import os
import signal
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.management import call_command
from django.db import connection
from reviewhub_client import ReviewHub, WebhookInvalid, verify_webhook

from .frameworks import FRAMEWORKS, REQUEST, Example, Reviewer
from .stack import Processes, free_port, production_env, start_asgi, wait_for_http
from .waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

EDITED = {"order_id": "A-1001", "amount": "49", "reason": "Item arrived damaged"}


@pytest.fixture(scope="module")
def servers(django_db_setup):
    """ReviewHub (uvicorn, production settings, embedded: no Celery) and the scripted model, as processes."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable: the server under test shares the test database.")
    model_port, hub_port = free_port(), free_port()
    model_url = f"http://127.0.0.1:{model_port}/v1"
    env = production_env(connection.settings_dict["NAME"], "", model_url, "unused")
    processes = Processes(env | {"REVIEWHUB_WEBHOOK_ALLOW_PRIVATE": "1"})  # webhooks to a receiver on 127.0.0.1
    try:
        model = processes.start("manage.py", "model_server", "--port", str(model_port), log_name="model-frameworks")
        wait_for_http(model_url + "/models", process=model)
        start_asgi(processes, hub_port)
        yield {"hub": f"http://127.0.0.1:{hub_port}", "model": model_url}
    finally:
        processes.stop()


@pytest.fixture
def token(servers) -> str:
    """A token of the agent "support-bot", made as the README says (manage.py create_agent_token)."""
    import io

    out = io.StringIO()
    call_command("create_agent_token", "support-bot", stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


@pytest.fixture(params=FRAMEWORKS)
def example(request, servers, token, tmp_path) -> Example:
    return Example(
        request.param, tmp_path / request.param, hub_url=servers["hub"], token=token, model_url=servers["model"]
    )


@pytest.fixture
def alice(servers, reviewer) -> Reviewer:
    """alice, logged in through the login form of the server, whose settings hash passwords as production does."""
    hasher = PBKDF2PasswordHasher()
    reviewer.password = hasher.encode("pw-alice", hasher.salt())
    reviewer.save(update_fields=["password"])
    return Reviewer(servers["hub"], "alice", "pw-alice")


def model_requests(servers) -> list[dict]:
    with urllib.request.urlopen(servers["model"].removesuffix("/v1") + "/_requests", timeout=10) as response:
        return json.loads(response.read())


def test_an_edit_to_49_resumes_two_waiting_processes_at_once_and_refunds_49_once(example, alice, servers, token):
    [call] = example.run("start", "edit-49", REQUEST)["calls"]  # this process pauses, proposes and exits
    assert call["arguments"]["amount"] == 490 and call["status"] == "pending"
    # Two other processes resume the same thread; both are waiting on the decision when it commits.
    resumers = [example.spawn("resume", "edit-49") for _ in range(2)]
    with ReviewHub(servers["hub"], token) as hub:
        assert hub.call(call["id"], wait=1).pending
        alice.edit(call["url"], EDITED)
        outputs = [example.finish(process)["output"] for process in resumers]
        assert example.refunds() == [("A-1001", 49.0)]
        assert all("Refunded $49.00 on order A-1001." in output for output in outputs)
        executed = hub.call(call["id"])
    assert executed.status == "executed" and executed.result.output.endswith("Refunded $49.00 on order A-1001.")


def test_a_rejection_reaches_the_frameworks_model_as_the_tool_result(example, alice, servers):
    reason = f"The order total is $49, not $490 ({example.script.stem})."
    waiting = example.spawn("start", "rejected", REQUEST, "--wait")  # proposes, then waits for the decision
    [call] = json.loads(waiting.stdout.readline())["calls"]
    alice.reject(call["url"], reason)
    output = example.finish(waiting)["output"]
    assert reason in output and example.refunds() == []
    tool_results = [m.get("content") for r in model_requests(servers) for m in r["messages"] if m.get("role") == "tool"]
    assert any(reason in str(content) for content in tool_results)


def test_a_process_killed_while_waiting_resumes_from_its_own_persistence_and_refunds_once(example, alice, servers):
    waiting = example.spawn("start", "killed", REQUEST, "--wait")
    [call] = json.loads(waiting.stdout.readline())["calls"]
    os.killpg(waiting.pid, signal.SIGKILL)
    waiting.wait(timeout=30)
    alice.edit(call["url"], EDITED)
    output = example.run("resume", "killed")["output"]
    assert "Refunded $49.00 on order A-1001." in output
    assert example.refunds() == [("A-1001", 49.0)]


class Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict, bytes]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_decision_reaches_the_client_as_a_webhook_it_verifies(servers, token, alice):
    Receiver.received = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    fields = {"order_id": {"type": "string"}, "amount": {"type": "number"}, "reason": {"type": "string"}}
    schema = {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False}
    try:
        with ReviewHub(servers["hub"], token) as hub:
            hook = hub.add_webhook(f"http://127.0.0.1:{receiver.server_address[1]}/hook")
            hub.declare_tool("issue_refund", input_schema=schema)
            arguments = {"order_id": "A-1001", "amount": 490, "reason": "Item arrived damaged"}
            call = hub.propose(thread_id="hooked", tool="issue_refund", arguments=arguments, idempotency_key="h-1")
            alice.edit(call.url, EDITED)
            [(headers, body)] = wait_for(lambda: Receiver.received, timeout=60)
    finally:
        receiver.shutdown()
    event = verify_webhook(body, headers, hook.secret)
    assert event.type == "call.decided" and event.data.id == call.id
    assert event.data.decision.verdict == "edit" and event.data.decision.arguments["amount"] == 49
    with pytest.raises(WebhookInvalid):
        verify_webhook(body.replace(b"49", b"94"), headers, hook.secret)
