"""The reliability harness's other two claimers: a remote agent process and the stdio MCP gateway, each killed
with SIGKILL at a random moment while it executes an approved call.

A trial proposes one call, has the process that executes it waiting on it, and kills that process at one of three
points: before its claim (waiting for the decision), after the claim before the tool's effect, or after the effect
before the report (the tool stops there, told by a file). The kill comes at a random moment: 0-1 s into the wait
for the decision, 0-1.5 leases after the tool stopped (a third of the claims outlive their first lease: one found
lapsed under its live process was not renewed, a problem). Then the harness does what a user and a reviewer would:
the user starts the agent (or the MCP client, which starts the gateway) again and calls again, as often as it
takes; a reviewer answers an outcome-unknown card as the records say (the effect is there: "ran", with its
output; it is not: "not_run", so it runs now). The trial ends when the call is executed and the user's process
has its result. It records the seconds from the kill until the call executed or its outcome unknown was shown,
and until settled; and every effect the tool recorded for the call (a second one is a duplicate).

- The remote agent (tests/e2e/reliability_agent.py): ReviewHub's client and a plain tool, against uvicorn; its tool
  alternates between one that is not idempotent ("refund") and one declared idempotent ("refund_once": a lapsed
  claim is released and claimed again with the same execution key, which the tool's effect is keyed by).
- The gateway (`manage.py mcp_gateway NAME` over stdio, started by the SDK's client in
  tests/e2e/reliability_mcp_client.py) in front of tests/e2e/reliability_upstream.py, whose refund records its effect by
  the idempotency key the client gives it. The gateway process is killed, and the upstream process it started
  with it (orphaned, it would sit in the stopped tool).

reliability.py holds the third target, ReviewHub's own Celery workers; test_reliability.py drives all.
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.core.management import call_command
from django.utils import timezone
from reviewhub_client import ReviewHub

from approvals import services
from approvals.models import ToolCall
from gateway import services as gateway_services
from gateway.models import Upstream, UpstreamTool
from tests.stack import ROOT

from .reliability import SETTLE_LIMIT, TIMINGS, children, wait_for

POINTS = ("before claim", "after claim", "after effect")
HANG = {"after claim": "before", "after effect": "after"}  # the tool's stop for each kill point
AGENT = Path(__file__).with_name("reliability_agent.py")
UPSTREAM = Path(__file__).with_name("reliability_upstream.py")
MCP_CLIENT = Path(__file__).with_name("reliability_mcp_client.py")
REFUND_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}},
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
KEPT_FROM_USERS = {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "SECRET_KEY"}
GATEWAY = "killgw"
LEASE = float(TIMINGS["EXECUTION_LEASE_SECONDS"])


@dataclass
class Kill:
    target: str
    point: str
    tool: str
    delay: float
    label: str = ""  # what the tool's files name the call by
    call_id: int = 0
    shown: float | None = None  # seconds from the kill to the call executed or its outcome unknown shown
    settled: float | None = None  # seconds from the kill to the call executed and its result with the user
    path: list = field(default_factory=list)  # what happened after the kill, in order
    effects: int = 0
    problems: list = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        return max(0, self.effects - 1)


def users_env() -> dict:
    """A user's process: this machine's environment without ReviewHub's settings."""
    return {k: v for k, v in os.environ.items() if k not in KEPT_FROM_USERS}


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def answer(process: subprocess.Popen, timeout: float) -> dict:
    """The one JSON line a user's process prints (or what went wrong), the process ended either way."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"failed": f"no answer within {timeout:.0f} s"}
    said = out.strip().splitlines()
    if process.returncode != 0 or not said:
        return {"failed": f"exited {process.returncode}: {(err or '')[-2000:]}"}
    return json.loads(said[-1])


class AgentTarget:
    """Remote agent processes against ReviewHub's HTTP API (uvicorn)."""

    name = "agent"

    def __init__(self, hub_url: str, folder: Path):
        import io

        out = io.StringIO()
        call_command("create_agent_token", "reliability-bot", stdout=out, stderr=io.StringIO())
        self.env = users_env() | {"REVIEWHUB_URL": hub_url, "REVIEWHUB_TOKEN": out.getvalue().strip()}
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.hub() as hub:
            hub.declare_tool("refund", input_schema=REFUND_SCHEMA)
            hub.declare_tool("refund_once", input_schema=REFUND_SCHEMA, idempotent=True)

    def hub(self) -> ReviewHub:
        return ReviewHub(self.env["REVIEWHUB_URL"], self.env["REVIEWHUB_TOKEN"])

    def tool_for(self, index: int) -> str:
        return ("refund", "refund_once")[(index // len(POINTS)) % 2]

    def propose(self, kill: Kill, index: int) -> None:
        arguments = {"order_id": f"K-{index}", "amount": 490}
        with self.hub() as hub:
            call = hub.propose(
                thread_id=f"kill-{index}", tool=kill.tool, arguments=arguments, idempotency_key=f"k{index}"
            )
        kill.call_id, kill.label = call.id, str(call.id)

    def start(self, kill: Kill) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, str(AGENT), str(kill.call_id), kill.tool, str(self.folder)],
            cwd=self.folder,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def ready(self, kill: Kill) -> bool:
        return (self.folder / f"waiting-{kill.call_id}").exists()

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()

    def told(self, said: dict) -> str:
        if "outcome_unknown" in said:
            return "outcome unknown"
        return "result" if "ran" in said else f"failed: {said.get('failed', said)}"

    def effects(self, kill: Kill) -> int:
        return sum(line.split()[0] == kill.label for line in lines(self.folder / "effects"))


class GatewayTarget:
    """The stdio gateway, started by an MCP client process, in front of the harness's upstream."""

    name = "gateway"

    def __init__(self, env: dict, folder: Path):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        gateway = gateway_services.gateway_create(name=GATEWAY)
        gateway.answer_after_seconds = int(SETTLE_LIMIT)
        gateway.save()
        upstream = Upstream.objects.create(
            gateway=gateway,
            name="killshop",
            command=f"{sys.executable} {UPSTREAM}",
            environment=f"EFFECTS_DIR={folder}",
        )
        UpstreamTool.objects.create(upstream=upstream, name="refund", description_template="Refund ${amount} ({key})")
        server = {
            "command": sys.executable,
            "args": [str(ROOT / "manage.py"), "mcp_gateway", GATEWAY],
            "env": env | {"PATH": os.environ.get("PATH", os.defpath), "REVIEWHUB_WAIT_RECHECK_SECONDS": "0.2"},
            "cwd": str(ROOT),
        }
        self.server = folder / "server.json"
        self.server.write_text(json.dumps(server))
        self.logs = folder / "logs"
        self.logs.mkdir(exist_ok=True)
        self.started = 0

    def tool_for(self, index: int) -> str:
        return "refund"

    def propose(self, kill: Kill, index: int) -> None:
        kill.label = f"k{index}"  # the call is proposed by the gateway when the client first calls

    def start(self, kill: Kill) -> subprocess.Popen:
        arguments = {"order_id": "K-1", "amount": 490, "key": kill.label}
        self.started += 1
        return subprocess.Popen(
            [sys.executable, str(MCP_CLIENT), str(self.server), "refund", json.dumps(arguments)],
            cwd=self.folder,
            env=users_env(),
            stdout=subprocess.PIPE,
            stderr=open(self.logs / f"client-{kill.label}-{self.started}.log", "w"),
            text=True,
            start_new_session=True,
        )

    def ready(self, kill: Kill) -> bool:
        call = ToolCall.objects.filter(gateway__gateway__agent__name=GATEWAY, arguments__key=kill.label).first()
        if call is not None:
            kill.call_id = call.pk
        return call is not None

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL the gateway process (a child of the client) and the upstream it started; the client, its
        connection gone, ends by itself (or is ended)."""
        gateways = children(process.pid)
        doomed = gateways + [pid for pid in gateways for pid in children(pid)]
        for pid in doomed:
            os.kill(pid, signal.SIGKILL)
        if answer(process, 30).get("failed", "").startswith("no answer"):
            raise RuntimeError("the MCP client did not end when its gateway was killed")

    def told(self, said: dict) -> str:
        text = said.get("text", "")
        if said.get("is_error") is False:
            return "result"
        if "nobody knows whether it ran" in text:
            return "outcome unknown"
        return f"failed: {said.get('failed') or text}"

    def effects(self, kill: Kill) -> int:
        return lines(self.folder / "effects").count(kill.label)


def hang(target, kill: Kill) -> None:
    if kill.point in HANG:
        (target.folder / f"hang-{HANG[kill.point]}-{kill.label}").touch()


def unhang(target, kill: Kill) -> None:
    for point in HANG.values():
        (target.folder / f"hang-{point}-{kill.label}").unlink(missing_ok=True)


def approve(call_id: int, reviewer) -> None:
    call = ToolCall.objects.get(pk=call_id)
    services.toolcall_decide(call_id=call_id, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)


def bring_to_the_kill(target, kill: Kill, index: int, reviewer) -> subprocess.Popen:
    """Propose, start the executing process, and let it reach the kill point; returns the process to kill."""
    target.propose(kill, index)
    hang(target, kill)
    process = target.start(kill)
    if not wait_for(lambda: target.ready(kill), 60):
        raise RuntimeError(f"{target.name} process never got to call {kill.label}: {answer(process, 5)}")
    wait_for(lambda: ToolCall.objects.filter(pk=kill.call_id, status=ToolCall.Status.PENDING).exists(), 30)
    if kill.point != "before claim":
        approve(kill.call_id, reviewer)
        marker = target.folder / f"at-{HANG[kill.point]}-{kill.label}"
        if not wait_for(marker.exists, 60):
            raise RuntimeError(f"the tool never stopped {HANG[kill.point]} its effect: {answer(process, 5)}")
    return process


def settle_as_the_records_say(target, kill: Kill, reviewer) -> None:
    """A reviewer answers the outcome-unknown card: the effect is in the records, or it is not."""
    if target.effects(kill):
        services.toolcall_settle(call_id=kill.call_id, reviewer=reviewer, answer="ran", output="Refunded $490 (seen)")
        kill.path.append("reviewer: ran")
    else:
        services.toolcall_settle(call_id=kill.call_id, reviewer=reviewer, answer="not_run")
        kill.path.append("reviewer: not run")


def recover(target, kill: Kill, killed: float, reviewer) -> None:
    """The user starts the process again and calls again until it has the result; the reviewer settles."""
    while (left := killed + SETTLE_LIMIT - time.monotonic()) > 0:
        told = target.told(answer(target.start(kill), left))
        kill.path.append(told)
        status = ToolCall.objects.get(pk=kill.call_id).status
        if told in ("result", "outcome unknown") and kill.shown is None:
            kill.shown = time.monotonic() - killed
        if status == ToolCall.Status.EXECUTED:
            if told == "result":
                kill.settled = time.monotonic() - killed
            else:  # calling again would propose a new call: the user was told wrong
                kill.problems.append(f"call {kill.call_id} executed, yet its user was told {told!r}")
            return
        if status == ToolCall.Status.OUTCOME_UNKNOWN:
            settle_as_the_records_say(target, kill, reviewer)
        elif told.startswith("failed"):
            kill.problems.append(f"after the kill the user was told {told!r} (call {status})")
            time.sleep(1)
    kill.problems.append(f"not settled {SETTLE_LIMIT:.0f} s after the kill: {kill.path}")


def held_to_the_kill(kill: Kill) -> None:
    """A claim its process holds for longer than a lease is renewed: its lease never runs out under it."""
    call = ToolCall.objects.get(pk=kill.call_id)
    held = call.status == ToolCall.Status.EXECUTING and call.lease_expires_at > timezone.now()
    if kill.point != "before claim" and not held:
        kill.problems.append(
            f"call {kill.call_id} {kill.delay:.1f} s into its claim: {call.status}, lease until "
            f"{call.lease_expires_at}: not renewed"
        )


def run_kill(target, rng, index: int, point: str, reviewer) -> Kill:
    longest = 1.0 if point == "before claim" else 1.5 * LEASE  # a third of the claims outlive their first lease
    kill = Kill(target=target.name, point=point, tool=target.tool_for(index), delay=rng.uniform(0, longest))
    try:
        process = bring_to_the_kill(target, kill, index, reviewer)
        time.sleep(kill.delay)
        held_to_the_kill(kill)
        target.kill(process)
        killed = time.monotonic()
        unhang(target, kill)
        if point == "before claim":
            approve(kill.call_id, reviewer)
        recover(target, kill, killed, reviewer)
    except RuntimeError as exc:
        kill.problems.append(str(exc))
    unhang(target, kill)
    kill.effects = target.effects(kill)
    if kill.effects != 1:
        kill.problems.append(f"call {kill.call_id}: {kill.effects} effects")
    return kill


def _times(values: list) -> dict:
    found = sorted(v for v in values if v is not None)
    if not found:
        return {"p50_s": None, "max_s": None}
    return {"p50_s": round(statistics.median(found), 1), "max_s": round(found[-1], 1)}


def summary(kills: list[Kill]) -> dict:
    return {
        "kills": len(kills),
        "by_point": {point: sum(k.point == point for k in kills) for point in POINTS},
        "by_tool": {tool: sum(k.tool == tool for k in kills) for tool in sorted({k.tool for k in kills})},
        "duplicates": sum(k.duplicates for k in kills),
        "outcome_unknown_settled": sum(any(p.startswith("reviewer") for p in k.path) for k in kills),
        "to_executed_or_unknown_shown": _times([k.shown for k in kills]),
        "to_settled": _times([k.settled for k in kills]),
        "to_settled_by_point": {p: _times([k.settled for k in kills if k.point == p]) for p in POINTS},
    }
