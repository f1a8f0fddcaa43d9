"""Claims are leases, with real processes: ReviewHub (uvicorn, production settings, on the test database) and a
remote agent process written as a user writes one (tests/remote/lease_agent.py: the client and a plain tool), killed
with SIGKILL after its claim and before the body, or after the body and before its report. Nothing runs twice,
nothing stays stuck, and the agent that comes back is told at once."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from reviewhub_client import ReviewHub

from approvals import services
from approvals.models import AuditEvent, ToolCall
from tests.agentapi import REFUND_SCHEMA
from tests.stack import Processes, production_env, start_asgi
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

AGENT = Path(__file__).with_name("lease_agent.py")
LEASE = 2  # seconds: the server's and this process's EXECUTION_LEASE_SECONDS
REFUND = {"order_id": "A-1001", "amount": 490, "reason": "arrived broken"}


def port_in_range(first: int = 8100, last: int = 8199) -> int:
    for port in range(first, last + 1):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free port in 8100-8199")


@pytest.fixture(scope="module")
def hub_url(django_db_setup, django_db_blocker):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable: the server under test shares the test database.")
    port = port_in_range()
    env = production_env(connection.settings_dict["NAME"], "", "http://127.0.0.1:9/v1", "unused")
    processes = Processes(env | {"EXECUTION_LEASE_SECONDS": str(LEASE)})
    try:
        start_asgi(processes, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        processes.stop()


@pytest.fixture
def agent_env(hub_url, settings, tmp_path) -> dict:
    settings.EXECUTION_LEASE_SECONDS = LEASE  # the sweep this test runs reads it
    import io

    out = io.StringIO()
    call_command("create_agent_token", "support-bot", stdout=out, stderr=io.StringIO())
    outside = {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "SECRET_KEY"}
    env = {k: v for k, v in os.environ.items() if k not in outside}
    return env | {"REVIEWHUB_URL": hub_url, "REVIEWHUB_TOKEN": out.getvalue().strip()}


def approved(agent_env, reviewer, *, idempotent: bool = False) -> int:
    with ReviewHub(agent_env["REVIEWHUB_URL"], agent_env["REVIEWHUB_TOKEN"]) as hub:
        hub.declare_tool("issue_refund", input_schema=REFUND_SCHEMA, idempotent=idempotent)
        call_id = hub.propose(thread_id="t-1", tool="issue_refund", arguments=REFUND, idempotency_key="k-1").id
    call = ToolCall.objects.get(pk=call_id)
    services.toolcall_decide(call_id=call_id, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    return call_id


def spawn(agent_env, tmp_path: Path, call_id: int, mode: str, **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(AGENT), str(call_id), mode, str(tmp_path / "effects")],
        cwd=tmp_path,
        env=agent_env | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def said(process: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"the agent exited {process.returncode}:\n{out}\n{err[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def kill_when(process: subprocess.Popen, happened) -> None:
    assert wait_for(happened, timeout=60), process.stderr.read() if process.poll() is not None else "still running"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def status_after_sweeps(call_id: int, wanted: str) -> str:
    def swept() -> bool:
        services.sweep_apply()
        return ToolCall.objects.get(pk=call_id).status == wanted

    wait_for(swept, timeout=60, interval=0.3)
    return ToolCall.objects.get(pk=call_id).status


def test_killed_after_the_claim_before_the_body_the_call_is_outcome_unknown_then_run_once_when_it_did_not(
    agent_env, reviewer, tmp_path
):
    call_id = approved(agent_env, reviewer)
    first = spawn(agent_env, tmp_path, call_id, "hang_before")
    kill_when(first, lambda: lines(tmp_path / "effects.attempts"))

    assert status_after_sweeps(call_id, "outcome_unknown") == "outcome_unknown"
    assert said(spawn(agent_env, tmp_path, call_id, "plain"), timeout=60)["outcome_unknown"]  # told at once
    services.toolcall_settle(call_id=call_id, reviewer=reviewer, answer="not_run")
    rerun = said(spawn(agent_env, tmp_path, call_id, "plain"))

    assert rerun["ran"] is True and rerun["output"] == "Refunded $490 on order A-1001"
    assert len(lines(tmp_path / "effects")) == 1
    assert ToolCall.objects.get(pk=call_id).status == ToolCall.Status.EXECUTED


def test_killed_after_the_body_before_the_report_the_call_is_outcome_unknown_and_never_runs_twice(
    agent_env, reviewer, tmp_path
):
    call_id = approved(agent_env, reviewer)
    first = spawn(agent_env, tmp_path, call_id, "hang_after")
    kill_when(first, lambda: lines(tmp_path / "effects"))

    assert status_after_sweeps(call_id, "outcome_unknown") == "outcome_unknown"
    assert AuditEvent.objects.filter(tool_call_id=call_id, kind="outcome_unknown").count() == 1
    services.toolcall_settle(call_id=call_id, reviewer=reviewer, answer="ran", output="Refunded $490 (bank)")
    rerun = said(spawn(agent_env, tmp_path, call_id, "plain"))

    assert rerun == {"ran": False, "output": "Refunded $490 (bank)"}
    assert len(lines(tmp_path / "effects.attempts")) == 1  # the body never ran again


def test_an_idempotent_tool_killed_after_the_body_is_claimed_again_and_run_once_more_with_the_same_key(
    agent_env, reviewer, tmp_path
):
    call_id = approved(agent_env, reviewer, idempotent=True)
    first = spawn(agent_env, tmp_path, call_id, "hang_after")
    kill_when(first, lambda: lines(tmp_path / "effects"))

    assert status_after_sweeps(call_id, "approved") == "approved"  # released
    rerun = said(spawn(agent_env, tmp_path, call_id, "plain"))

    attempts = lines(tmp_path / "effects.attempts")
    assert rerun["ran"] is True and len(attempts) == 2 and attempts[0] == attempts[1]
    assert len(lines(tmp_path / "effects")) == 1  # the key made the second run harmless
    assert ToolCall.objects.get(pk=call_id).status == ToolCall.Status.EXECUTED


def test_a_long_body_keeps_its_claim_past_the_lease(agent_env, reviewer, tmp_path):
    call_id = approved(agent_env, reviewer)
    agent = spawn(agent_env, tmp_path, call_id, "slow", SLOW_SECONDS=str(3 * LEASE))
    stop, outcomes = threading.Event(), []

    def sweeping():
        while not stop.wait(0.5):
            outcomes.append(services.sweep_apply())
        connection.close()

    sweeper = threading.Thread(target=sweeping)
    sweeper.start()
    try:
        result = said(agent)
    finally:
        stop.set()
        sweeper.join()

    assert result["ran"] is True and len(outcomes) >= 6
    assert not any(o["unknown"] or o["released"] for o in outcomes)
    assert ToolCall.objects.get(pk=call_id).status == ToolCall.Status.EXECUTED
    assert len(lines(tmp_path / "effects")) == 1


def test_an_agent_waiting_on_another_claimer_is_told_at_once_when_the_outcome_becomes_unknown(
    agent_env, reviewer, tmp_path
):
    call_id = approved(agent_env, reviewer)
    first = spawn(agent_env, tmp_path, call_id, "hang_after")
    kill_when(first, lambda: lines(tmp_path / "effects"))
    waiting = spawn(agent_env, tmp_path, call_id, "plain")  # loses the claim: waits while it is executing
    time.sleep(1)

    status_after_sweeps(call_id, "outcome_unknown")

    assert said(waiting, timeout=60)["outcome_unknown"]
    assert len(lines(tmp_path / "effects.attempts")) == 1
