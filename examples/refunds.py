"""What the three framework examples share: the example's own shop (orders and refunds in an SQLite file, so a
refund is observable), its `issue_refund` tool's body and schema, the facts its code fetches for the reviewer,
and the command line:

    python examples/<framework>_refund.py start THREAD "Order A-1001 arrived broken. Please refund $490." [--wait]
    python examples/<framework>_refund.py resume THREAD

`start` runs the agent until it pauses and proposes the paused calls to ReviewHub (with --wait it then goes on
like `resume`); `resume`, in this process or any other, waits for the decisions, resumes the framework's run
from its own persistence, executes each approved call once, and prints the agent's final answer. Settings come
from --options or the environment: REVIEWHUB_URL, REVIEWHUB_TOKEN, OPENAI_BASE_URL (the scripted model's
`/v1`), EXAMPLE_DATA (a folder for the example's files), EXAMPLE_PAYMENT_SECONDS (how long the pretend payment
provider takes to refund; 0 by default), EXAMPLE_PAYMENT_DECLINES (set: the provider declines every refund).

Each framework's `issue_refund` tool is written the framework's usual way (no call id, no ReviewHub code inside):
the adapter runs it through the gate, with the arguments the reviewer approved, once across processes."""

import argparse
import json
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from reviewhub_client import Gate, ReviewHub, Store

ORDERS = {"A-1001": 49.00, "A-1002": 129.00, "A-1003": 18.50}
SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "reason": {"type": "string", "minLength": 1, "maxLength": 500},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}
INSTRUCTIONS = "You are a support agent for a small shop. Use issue_refund to refund customers."


class Shop:
    """The example's shop: refunds land in an SQLite table anyone can read."""

    def __init__(self, path: Path):
        self.path = path
        with closing(sqlite3.connect(path, timeout=30)) as conn, conn:
            conn.execute("create table if not exists refunds (order_id text, amount real, reason text, pid integer)")

    def refund(self, order_id: str, amount: float, reason: str) -> dict:
        """Refund the order; what the payment provider answers (the model reads it as JSON)."""
        time.sleep(float(os.environ.get("EXAMPLE_PAYMENT_SECONDS") or 0))  # the payment provider at work
        if os.environ.get("EXAMPLE_PAYMENT_DECLINES"):
            raise RuntimeError(f"The payment provider declined the refund on order {order_id}.")
        with closing(sqlite3.connect(self.path, timeout=30)) as conn, conn:
            conn.execute("insert into refunds values (?, ?, ?, ?)", (order_id, amount, reason, os.getpid()))
        return {"refunded": amount, "order_id": order_id, "message": f"Refunded ${amount:.2f} on order {order_id}."}

    def refunds(self) -> list[tuple]:
        with closing(sqlite3.connect(self.path, timeout=30)) as conn:
            return conn.execute("select order_id, amount, reason, pid from refunds").fetchall()


def facts(tool: str, arguments: dict) -> dict:
    """What the example's own code knows about the order, shown to the reviewer as the agent's facts."""
    total = ORDERS.get(str(arguments.get("order_id")))
    return {"order_total": "unknown order" if total is None else f"${total:.2f}"}


def options(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hub", default=os.environ.get("REVIEWHUB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("REVIEWHUB_TOKEN", ""))
    parser.add_argument("--model", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8765/v1"))
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("EXAMPLE_DATA", "example-data")))
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="run until the agent pauses and propose its calls")
    start.add_argument("thread")
    start.add_argument("request")
    start.add_argument("--wait", action="store_true", help="then wait for the decisions and go on")
    resume = commands.add_parser("resume", help="wait for the decisions and resume the run")
    resume.add_argument("thread")
    parsed = parser.parse_args()
    parsed.data.mkdir(parents=True, exist_ok=True)
    return parsed


def connect(opts: argparse.Namespace) -> tuple[ReviewHub, Gate, Shop]:
    """ReviewHub, the thread's gate (its calls and state in the data folder) and the shop; declares the tool."""
    hub = ReviewHub(opts.hub, opts.token)
    hub.declare_tool(
        "issue_refund",
        description="Refund money to the customer of an order.",
        input_schema=SCHEMA,
        description_template="Refund ${amount} on order {order_id}",
        key_fields=["order_id", "amount"],
    )
    store = Store(opts.data / "reviewhub.sqlite3")
    gate = Gate(hub, store, opts.thread, user_request=getattr(opts, "request", None), facts=facts)
    return hub, gate, Shop(opts.data / "shop.sqlite3")


def say(event: str, **fields) -> None:
    """One JSON line per event on stdout, for people and for the tests."""
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def proposed(calls) -> None:
    say("proposed", calls=[{"id": c.id, "url": c.url, "arguments": c.arguments, "status": c.status} for c in calls])
