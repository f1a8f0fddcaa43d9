"""What the three framework agents of tests/client/test_framework_leases.py share: their outside world and their command
line. Each agent is written the framework's usual way: two plain tools (`issue_refund`, `send_email`) with no
call id and no ReviewHub code inside, wrapped by the framework's ReviewHub adapter.

    python tests/client/leased_agents/<framework>_agent.py start THREAD REQUEST   # run, propose, wait, resume, finish
    python tests/client/leased_agents/<framework>_agent.py resume THREAD          # (again) from the framework's store

The outside world is a pretend payment provider and mail server (`World`), as a user's agent reaches through an
SDK configured once: the payment provider takes an idempotency key (ReviewHub's `execution_key`, the same on every
run of a call), so a refund is safe to run twice and is declared idempotent; the mail server takes none, so
`send_email` is not. Each records in AGENT_DATA one line per attempt (`attempts`) and per effect (`effects`): the
call's execution key and what was done. AGENT_HANG=before stops after the attempt is recorded and before the
effect, AGENT_HANG=after after the effect and before the tool returns; both then wait to be killed.

Settings from the environment: REVIEWHUB_URL, REVIEWHUB_TOKEN, OPENAI_BASE_URL (the scripted model's /v1),
AGENT_DATA. Prints one JSON line per event: "proposed", then "finished", "outcome_unknown" (exit 3: OutcomeUnknown
reached the agent as itself) or "stopped" (exit 4: another ReviewHub error, and what the framework wrapped it in)."""

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from reviewhub_client import Gate, OutcomeUnknown, ReviewHub, ReviewHubError, Store, execution_key

REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "reason": {"type": "string", "minLength": 1},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}
EMAIL_SCHEMA = {
    "type": "object",
    "properties": {name: {"type": "string", "minLength": 1} for name in ("to", "order_id", "subject", "body")},
    "required": ["to", "order_id", "subject", "body"],
    "additionalProperties": False,
}
INSTRUCTIONS = "You are a support agent for a small shop. Refund customers and email them when asked."


class World:
    """The payment provider and the mail server, with what each did written down where a test can count it."""

    def __init__(self, folder: Path, idempotency_key: Callable[[], str]):
        self.folder, self.idempotency_key = folder, idempotency_key
        self.hang = os.environ.get("AGENT_HANG", "")

    def _note(self, name: str, key: str, what: str) -> None:
        with open(self.folder / name, "a") as notes:
            notes.write(json.dumps({"key": key, "what": what, "pid": os.getpid()}) + "\n")

    def _effects(self) -> list[dict]:
        path = self.folder / "effects"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def _act(self, what: str, *, idempotent: bool) -> None:
        key = self.idempotency_key()
        self._note("attempts", key, what)
        if self.hang == "before":
            time.sleep(600)
        if not (idempotent and any(effect["key"] == key for effect in self._effects())):
            self._note("effects", key, what)
        if self.hang == "after":
            time.sleep(600)

    def refund(self, order_id: str, amount: float) -> str:
        """A payment API with idempotency keys: the same key twice refunds once."""
        self._act(f"refund {order_id} {amount:.2f}", idempotent=True)
        return f"Refunded ${amount:.2f} on order {order_id}."

    def send_mail(self, to: str, subject: str, body: str) -> str:
        """A mail server: every send is a mail."""
        self._act(f"mail {to} {subject}", idempotent=False)
        return f"Sent '{subject}' to {to}."


def connect(thread_id: str, user_request: str | None) -> tuple[Gate, World]:
    """ReviewHub with both tools declared, the thread's gate (its store in AGENT_DATA) and the world."""
    folder = Path(os.environ["AGENT_DATA"])
    folder.mkdir(parents=True, exist_ok=True)
    hub = ReviewHub(os.environ["REVIEWHUB_URL"], os.environ["REVIEWHUB_TOKEN"])
    hub.declare_tool(
        "issue_refund",
        description="Refund money to the customer of an order.",
        input_schema=REFUND_SCHEMA,
        description_template="Refund ${amount} on order {order_id}",
        idempotent=True,
    )
    hub.declare_tool(
        "send_email",
        description="Email a customer.",
        input_schema=EMAIL_SCHEMA,
        description_template="Email {to}: {subject}",
    )
    gate = Gate(hub, Store(folder / "reviewhub.sqlite3"), thread_id, user_request=user_request)
    return gate, World(folder, idempotency_key=execution_key)


def say(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def proposed(calls) -> None:
    say("proposed", calls=[{"id": c.id, "tool": c.tool, "status": c.status} for c in calls])


def from_reviewhub(exc: BaseException) -> ReviewHubError | None:
    """The ReviewHub error that ended the run, if any, however the framework wrapped it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ReviewHubError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def main(run: Callable[[str, str, str | None], str]) -> None:
    """The command line: `run(command, thread, request)` does the framework's part and returns its final output."""
    command, thread_id = sys.argv[1], sys.argv[2]
    request = sys.argv[3] if command == "start" else None
    try:
        output = run(command, thread_id, request)
    except OutcomeUnknown as exc:  # a user's agent stops here: a reviewer settles the call
        say("outcome_unknown", call_id=exc.call_id, detail=str(exc))
        sys.exit(3)
    except Exception as exc:
        found = from_reviewhub(exc)  # what reached the agent, and what it was wrapped in
        if found is None:
            raise
        say("stopped", error=type(exc).__name__, reviewhub_error=type(found).__name__, detail=str(found))
        sys.exit(4)
    say("finished", output=output)
