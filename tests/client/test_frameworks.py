"""The three frameworks for real (LangGraph/LangChain in both of its middleware's modes, the OpenAI Agents SDK,
Pydantic AI): each example, its tool written the framework's usual way, runs as its own processes against
ReviewHub (uvicorn on the test database) and the scripted model server (`python manage.py model_server`), both
real processes; a reviewer decides through the call page's forms."""

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from reviewhub_client import ReviewHub, WebhookInvalid, verify_webhook

from tests.waiting import wait_for

from .frameworks import FRAMEWORKS, REQUEST, Example, Reviewer, tool_messages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres, pytest.mark.usefixtures("fresh_model")]

EDITED = {"order_id": "A-1001", "amount": "49", "reason": "Item arrived damaged"}
SMALL_REQUEST = "Order A-1001 arrived broken. Please refund $49."
REFUNDED_49 = "Refunded $49.00 on order A-1001."


@pytest.fixture
def make_example(servers, token, tmp_path):
    def make(variant: str) -> Example:
        return Example(variant, tmp_path / variant, hub_url=servers["hub"], token=token, model_url=servers["model"])

    return make


@pytest.fixture(params=FRAMEWORKS)
def example(request, make_example) -> Example:
    return make_example(request.param)


@pytest.fixture
def alice_logged_in(servers, alice) -> Reviewer:
    """alice, logged in through the login form of the server."""
    return Reviewer(servers["hub"], "alice", "pw-alice")


def test_an_approved_call_runs_the_plain_tool_once_over_two_resumes_and_the_model_reads_json(
    example, alice_logged_in, servers
):
    [call] = example.run("start", "approved", SMALL_REQUEST)["calls"]
    assert alice_logged_in.approve(call["url"]) == 200
    first = example.run("resume", "approved")["output"]
    again = example.run("resume", "approved")["output"]  # a second resume, in another process: nothing runs twice
    assert example.refunds() == [("A-1001", 49.0)]
    assert REFUNDED_49 in first and REFUNDED_49 in again
    [output] = tool_messages(servers)
    assert json.loads(output) == {"refunded": 49.0, "order_id": "A-1001", "message": REFUNDED_49}


def test_an_edit_to_49_resumes_two_waiting_processes_at_once_and_refunds_49_once(
    example, alice_logged_in, servers, token
):
    [call] = example.run("start", "edit-49", REQUEST)["calls"]  # this process pauses, proposes and exits
    assert call["arguments"]["amount"] == 490 and call["status"] == "pending"
    # Two other processes resume the same thread; both are waiting on the decision when it commits.
    resumers = [example.spawn("resume", "edit-49") for _ in range(2)]
    with ReviewHub(servers["hub"], token) as hub:
        assert hub.call(call["id"], wait=1).pending
        alice_logged_in.edit(call["url"], EDITED)
        outputs = [example.finish(process)["output"] for process in resumers]
        assert example.refunds() == [("A-1001", 49.0)]  # the tool ran the reviewer's 49, not the model's 490
        assert all(REFUNDED_49 in output for output in outputs), outputs
        executed = hub.call(call["id"])
    assert executed.status == "executed" and json.loads(executed.result.output)["message"] == REFUNDED_49
    assert type(executed.decision.arguments["amount"]) is int and executed.decision.arguments["amount"] == 49
    page = alice_logged_in.page(call["url"])
    assert "Refund $49 on order A-1001" in page and "Refund $49.0" not in page


def test_a_rejection_with_guidance_gives_the_model_the_reason_and_the_guidance(example, alice_logged_in, servers):
    reason, guidance = "The order total is $49, not $490.", "Offer the customer a replacement instead."
    waiting = example.spawn("start", "sent-back", REQUEST, "--wait")  # proposes, then waits for the decision
    [call] = json.loads(waiting.stdout.readline())["calls"]
    assert alice_logged_in.respond(call["url"], reason, guidance) == 200
    example.finish(waiting)
    assert example.refunds() == []
    assert any(reason in output and guidance in output for output in tool_messages(servers)), tool_messages(servers)


def test_a_rejection_reaches_the_frameworks_model_as_the_tool_result(example, alice_logged_in, servers):
    reason = f"The order total is $49, not $490 ({example.script.stem})."
    waiting = example.spawn("start", "rejected", REQUEST, "--wait")  # proposes, then waits for the decision
    [call] = json.loads(waiting.stdout.readline())["calls"]
    alice_logged_in.reject(call["url"], reason)
    output = example.finish(waiting)["output"]
    assert reason in output and example.refunds() == []
    assert any(reason in output for output in tool_messages(servers))


def test_a_tool_that_fails_ends_the_run_with_its_error_and_a_rerun_fails_the_same_way(
    example, alice_logged_in, servers, token
):
    example.env["EXAMPLE_PAYMENT_DECLINES"] = "1"
    [call] = example.run("start", "declined", SMALL_REQUEST)["calls"]
    alice_logged_in.approve(call["url"])
    assert "declined the refund on order A-1001" in example.fail("resume", "declined")
    assert "declined the refund on order A-1001" in example.fail("resume", "declined")  # the recorded failure
    assert not any("Please try again" in output for output in tool_messages(servers))
    with ReviewHub(servers["hub"], token) as hub:
        assert hub.call(call["id"]).status == "failed"
    assert example.refunds() == []


def test_a_process_killed_while_waiting_resumes_from_its_own_persistence_and_refunds_once(
    example, alice_logged_in, servers
):
    waiting = example.spawn("start", "killed", REQUEST, "--wait")
    [call] = json.loads(waiting.stdout.readline())["calls"]
    os.killpg(waiting.pid, signal.SIGKILL)
    waiting.wait(timeout=30)
    alice_logged_in.edit(call["url"], EDITED)
    output = example.run("resume", "killed")["output"]
    assert REFUNDED_49 in output
    assert example.refunds() == [("A-1001", 49.0)]


def outside_run(script: str, *args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """One of the tests' framework scripts as its own process, outside the project (like the examples)."""
    command = [sys.executable, str(Path(__file__).with_name(script)), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def test_a_langgraph_interrupt_of_another_shape_raises_naming_both_modes(tmp_path):
    done = outside_run("langgraph_shapes.py", cwd=tmp_path, env=Example.outside_env())
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["unknown"].startswith("ValueError: LangGraph interrupt {'question': 'Which order?'}")
    assert "batched mode" in found["unknown"] and "per_call mode" in found["unknown"]


def test_a_batched_interrupt_is_matched_to_the_ai_messages_tool_calls_by_name_and_arguments(tmp_path):
    done = outside_run("langgraph_shapes.py", cwd=tmp_path, env=Example.outside_env())
    found = json.loads(done.stdout)
    assert found["batched"] == ["call_c", "call_a"]
    assert found["unmatched"].startswith("ValueError: batched HumanInTheLoopMiddleware interrupt: no tool call")


def test_an_approved_call_whose_tool_ran_outside_the_gate_fails_the_resume_naming_the_call(
    make_example, alice_logged_in
):
    example = make_example("langgraph")
    [call] = example.run("start", "forgotten", SMALL_REQUEST)["calls"]
    alice_logged_in.approve(call["url"])
    done = outside_run("langgraph_forgotten_gate.py", "resume", "forgotten", env=example.env, cwd=example.data)
    assert done.returncode != 0
    assert f"call {call['id']} (issue_refund) was approved but never ran through ReviewHub's gate" in done.stderr
    assert "ReviewHubMiddleware(gate)" in done.stderr


class Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict, bytes]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_decision_reaches_the_client_as_a_webhook_it_verifies(servers, token, alice_logged_in):
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
            alice_logged_in.edit(call.url, EDITED)
            [(headers, body)] = wait_for(lambda: Receiver.received, timeout=60)
    finally:
        receiver.shutdown()
    event = verify_webhook(body, headers, hook.secret)
    assert event.type == "call.decided" and event.data.id == call.id
    assert event.data.decision.verdict == "edit" and event.data.decision.arguments["amount"] == 49
    with pytest.raises(WebhookInvalid):
        verify_webhook(body.replace(b"49", b"94"), headers, hook.secret)
