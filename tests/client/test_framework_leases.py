"""Claims are leases, with real processes, for each framework adapter: ReviewHub (uvicorn, production settings,
PostgreSQL) and the scripted model server as processes, and an agent process written the framework's usual way
(tests/client/leased_agents/: LangGraph with HumanInTheLoopMiddleware in its default batched mode, the OpenAI Agents SDK
with needs_approval, Pydantic AI with tool_plain(requires_approval=True); plain tools, no call id). The agent is
killed with SIGKILL after its claim and before the tool's effect, or after the effect and before its report, then
started again. Nothing runs twice, nothing stays stuck: an idempotent tool (the refund, keyed by the execution
key) is claimed again and run once more with the same key; any other (the email) becomes outcome unknown, the
agent that comes back is told so at once, and a reviewer's answer lets the run go on.

A sweeper thread stands in for beat's sweep, as often as production's would run it with this short lease."""

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from tests.livestack import http_login
from tests.waiting import wait_for

from .frameworks import Example, model_requests, tool_messages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres, pytest.mark.usefixtures("fresh_model")]

AGENTS = Path(__file__).with_name("leased_agents")
FRAMEWORKS = ["langgraph", "openai_agents", "pydantic_ai"]
LEASE = 2  # seconds: the server's and the sweep's EXECUTION_LEASE_SECONDS
SERVER_ENV = {"EXECUTION_LEASE_SECONDS": str(LEASE)}  # for the servers fixture (conftest.py)
REFUND = "Order A-1001 arrived broken. Please refund $49."
EMAIL = "Email Dana that her replacement has shipped."
REFUNDED = "Refunded $49.00 on order A-1001."
SENT = "Sent 'An update on your order' to dana.smith@gmail.co."


@pytest.fixture
def sweeping(servers, settings):
    """The sweep every 0.3 s while the test runs (what beat does every SWEEP_INTERVAL_SECONDS)."""
    settings.EXECUTION_LEASE_SECONDS = LEASE
    stop = threading.Event()

    def sweep():
        while not stop.wait(0.3):
            services.sweep_apply()
        connection.close()

    sweeper = threading.Thread(target=sweep, name="sweeper")
    sweeper.start()
    yield
    stop.set()
    sweeper.join()


class Agent:
    """One framework's agent script, its data folder (its framework store and the world's records) and env."""

    def __init__(self, framework: str, data: Path, *, hub: str, model: str, token: str):
        self.script = AGENTS / f"{framework}_agent.py"
        self.data = data
        data.mkdir(parents=True, exist_ok=True)
        self.env = Example.outside_env() | {
            "REVIEWHUB_URL": hub,
            "REVIEWHUB_TOKEN": token,
            "OPENAI_BASE_URL": model,
            "OPENAI_API_KEY": "unused",
            "AGENT_DATA": str(data),
        }
        self.processes: list[subprocess.Popen] = []

    def spawn(self, *args: str, **env: str) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, str(self.script), *args],
            cwd=self.data,
            env=self.env | env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def kill_left(self) -> None:
        """SIGKILL what a failing test left running (each process is its own group)."""
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()

    def records(self, name: str) -> list[dict]:
        """What the world wrote down: each attempt ("attempts") or effect ("effects"), with its execution key."""
        path = self.data / name
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def ended(process: subprocess.Popen, timeout: float = 60) -> tuple[int, dict, str]:
    """The exit code, the last event printed and the stderr of a process, once it ended."""
    out, err = process.communicate(timeout=timeout)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return process.returncode, (events[-1] if events else {}), err


def finished(process: subprocess.Popen, timeout: float = 60) -> str:
    code, event, err = ended(process, timeout)
    assert code == 0 and event.get("event") == "finished", f"exited {code}: {event}\n{err[-4000:]}"
    return event["output"]


@pytest.fixture(params=FRAMEWORKS)
def framework_agent(request, servers, token, tmp_path):
    made = Agent(request.param, tmp_path / request.param, hub=servers["hub"], model=servers["model"], token=token)
    yield made
    made.kill_left()


def killed_at(framework_agent: Agent, request: str, point: str, reviewer) -> ToolCall:
    """Start the agent, approve its call as a reviewer, and SIGKILL it at `point` ("before" the tool's effect,
    after its claim; "after" the effect, before its report). Returns the call."""
    process = framework_agent.spawn("start", "t-1", request, AGENT_HANG=point)
    line = process.stdout.readline()
    assert line, f"the agent said nothing: {process.stderr.read()[-4000:]}"
    [proposed] = json.loads(line)["calls"]
    call = ToolCall.objects.get(pk=proposed["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    reached = "attempts" if point == "before" else "effects"
    assert wait_for(lambda: framework_agent.records(reached), timeout=60), (
        process.stderr.read() if process.poll() else "hung"
    )
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTING  # claimed, no report
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return call


def nothing_stuck(call: ToolCall) -> None:
    """Every call of the run is done (executed or failed): none executing, approved, pending or outcome unknown."""
    left = ToolCall.objects.filter(run_id=call.run_id).exclude(status__in=["executed", "failed"])
    assert not left.exists(), list(left.values_list("pk", "status"))


@pytest.mark.parametrize("point", ["before", "after"])
def test_an_idempotent_tool_killed_is_claimed_again_and_run_once_more_with_the_same_key(
    framework_agent, point, reviewer, sweeping, servers
):
    call = killed_at(framework_agent, REFUND, point, reviewer)

    output = finished(
        framework_agent.spawn("resume", "t-1")
    )  # comes back at once: waits out the lapsed lease, claims again

    attempts, effects = framework_agent.records("attempts"), framework_agent.records("effects")
    assert len(attempts) == 2 and attempts[0]["key"] == attempts[1]["key"]  # run again, with the same key
    assert [e["what"] for e in effects] == ["refund A-1001 49.00"]  # the key made the second run harmless
    assert REFUNDED in output and REFUNDED in tool_messages(servers)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    released = AuditEvent.objects.filter(tool_call=call, kind="lease_lapsed")
    assert [event.payload["released"] for event in released] == [True]
    assert not AuditEvent.objects.filter(tool_call=call, kind="outcome_unknown").exists()
    nothing_stuck(call)


def told_unknown(framework_agent: Agent, call: ToolCall) -> None:
    """The agent that comes back is told at once that the call's outcome is unknown, and runs nothing."""
    code, event, err = ended(framework_agent.spawn("resume", "t-1"))  # well before execute_once's 300 s
    assert code == 3, f"exited {code}: {event}\n{err[-4000:]}"  # OutcomeUnknown reached the agent as itself
    assert event["event"] == "outcome_unknown" and event["call_id"] == call.pk
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.OUTCOME_UNKNOWN
    assert AuditEvent.objects.filter(tool_call=call, kind="outcome_unknown").count() == 1


def test_a_tool_killed_before_its_effect_is_outcome_unknown_then_run_once_when_it_did_not_run(
    framework_agent, reviewer, sweeping, servers
):
    call = killed_at(framework_agent, EMAIL, "before", reviewer)
    told_unknown(framework_agent, call)
    assert framework_agent.records("effects") == [] and len(framework_agent.records("attempts")) == 1

    services.toolcall_settle(call_id=call.pk, reviewer=reviewer, answer="not_run")
    output = finished(framework_agent.spawn("resume", "t-1"))

    attempts, effects = framework_agent.records("attempts"), framework_agent.records("effects")
    assert len(attempts) == 2 and attempts[0]["key"] == attempts[1]["key"]
    assert len(effects) == 1 and effects[0]["what"].startswith("mail dana.smith@gmail.co")
    assert SENT in output and SENT in tool_messages(servers)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    nothing_stuck(call)


def settle_on_the_card(base_url: str, call: ToolCall, form: dict) -> int:
    """alice posts one of the outcome-unknown card's forms, as a browser does (session, CSRF token, origin)."""
    cookie = http_login(base_url, "alice", "pw-alice")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    page_url = f"{base_url}/calls/{call.pk}/"
    page = opener.open(urllib.request.Request(page_url, headers={"Cookie": cookie}), timeout=15).read().decode()
    assert "Did this happen?" in page
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    headers = {"Cookie": cookie, "Referer": page_url, "Origin": base_url}
    body = urllib.parse.urlencode(form | {"csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(f"{base_url}/calls/{call.pk}/settle/", data=body, headers=headers)
    with opener.open(request, timeout=15) as response:
        return response.status


def test_a_tool_killed_after_its_effect_is_outcome_unknown_and_what_the_reviewer_says_it_did_is_its_output(
    framework_agent, alice, sweeping, servers
):
    call = killed_at(framework_agent, EMAIL, "after", alice)
    told_unknown(framework_agent, call)

    said = "Sent: the mail server's log shows it left at 07:02."
    assert settle_on_the_card(servers["hub"], call, {"answer": "ran", "output": said}) == 200
    output = finished(framework_agent.spawn("resume", "t-1"))

    assert (
        len(framework_agent.records("attempts")) == 1 and len(framework_agent.records("effects")) == 1
    )  # never run again
    assert said in output and said in tool_messages(servers)  # the model read the reviewer's output
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    nothing_stuck(call)


def test_a_tool_killed_after_its_effect_whose_run_the_reviewer_fails_stops_the_agent_and_runs_nothing(
    framework_agent, alice, sweeping, servers
):
    call = killed_at(framework_agent, EMAIL, "after", alice)
    told_unknown(framework_agent, call)
    asked = len(model_requests(servers))

    form = {"answer": "fail", "reason": "The mail server lost its log; write to Dana by hand."}
    assert settle_on_the_card(servers["hub"], call, form) == 200
    code, event, err = ended(framework_agent.spawn("resume", "t-1"))

    assert code == 4, f"exited {code}: {event}\n{err[-4000:]}"
    assert event["error"] == event["reviewhub_error"] == "ToolFailed"  # as itself, unwrapped
    assert form["reason"] in event["detail"]
    assert len(framework_agent.records("attempts")) == 1 and len(framework_agent.records("effects")) == 1
    assert len(model_requests(servers)) == asked  # the model was not asked again
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.FAILED
    assert Run.objects.get(pk=call.run_id).status == Run.Status.FAILED  # with the reason, for Retry
    nothing_stuck(call)
