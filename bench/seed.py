"""Seed a PostgreSQL database with a big, consistent record: runs, tool calls,
decisions and an audit trail whose hash chain verifies.

    DATABASE_URL=postgres://USER@HOST:5432/DBNAME python bench/seed.py --events 1000000 --calls 100000

The database must be empty (it is migrated first). Rows are generated in Python
with the application's own hash function and loaded with COPY; foreign-key and
append-only triggers are off for this session only (session_replication_role),
which is why a superuser is needed. Deterministic for a given --seed.
"""

import argparse
import json
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from psycopg import Copy  # noqa: E402

from agents import demo_data  # noqa: E402
from approvals.audit import _json_safe  # noqa: E402
from approvals.models import (  # noqa: E402
    GENESIS_HASH,
    AuditEvent,
    AuditHead,
    PolicyRule,
    ShadowResult,
    args_hash,
    event_hash,
)

CUSTOMERS = [
    f"{first} {last}"
    for first in ("Dana", "Lee", "Maria", "Sam", "Ada", "Ravi", "Noor", "Jon", "Ines", "Kai")
    for last in ("Smith", "Wong", "Garcia", "Okafor", "Novak", "Ito", "Berg", "Haddad")
]
TOOLS = [  # name, tier, weight
    ("get_order_status", "read_only", 25),
    ("lookup_customer", "read_only", 10),
    ("add_order_note", "reversible", 10),
    ("issue_refund", "approval", 35),
    ("send_email", "approval", 20),
]
VERDICTS = [("approve", 60), ("edit", 10), ("reject", 20), ("expire", 10)]
EXPIRY_REASON = "no decision within 1 h"

# COPY column lists. The audit events are written while the record is generated;
# the other tables' rows are kept in Seeder.rows and loaded afterwards, in this order.
EVENT_COLUMNS = (
    "id", "run_id", "tool_call_id", "kind", "actor_id", "actor_label", "payload", "created_at", "prev_hash", "hash",
)  # fmt: skip
ROW_COLUMNS = {
    "run": (
        "id", "public_id", "agent", "request", "requested_by_id", "status", "step_count", "max_steps", "thinking",
        "last_error", "dry_run", "created_at", "updated_at", "finished_at",
    ),
    "message": ("id", "run_id", "seq", "role", "content", "tool_calls", "tool_call_id", "created_at"),
    "toolcall": (
        "id", "run_id", "message_id", "call_id", "tool_name", "arguments", "raw_arguments", "arguments_hash", "tier",
        "status", "policy", "required_approvals", "description", "facts", "reasoning", "user_request", "expires_at",
        "approved_arguments", "output", "output_recorded", "claimed_at", "executed_at", "created_at",
        "edited_description", "review_round", "returned_reason", "changed_facts",
    ),
    "decision": (
        "id", "tool_call_id", "reviewer_id", "verdict", "arguments", "arguments_hash", "reason", "final", "created_at",
        "guidance", "round",
    ),
    "shadowresult": ("id", "rule_id", "tool_call_id", "outcome", "verdict", "agreed", "created_at"),
}  # fmt: skip


def copy_statement(model: str, columns: tuple[str, ...]) -> str:
    return f"COPY approvals_{model} ({', '.join(columns)}) FROM STDIN"


def customer_facts(tier: str, customer: str, email: str) -> dict:
    """What the gate shows the reviewer of a call that needs approval."""
    if tier != "approval":
        return {}
    return {
        "customer": customer,
        "customer_email": email,
        "order_status": "delivered",
        "order_total": "$420.00",
        "already_refunded": "$0.00",
    }


@dataclass
class SeededCall:
    """One generated tool call: what was proposed, then what became of it."""

    id: int
    run_id: int
    message_id: int
    at: datetime
    step: timedelta
    tool: str
    tier: str
    args: dict
    facts: dict
    description: str
    policy: dict
    shadowed: bool
    decided_args: dict | None
    verdict: str = ""  # stays empty for a call that ran without review
    status: str = "executed"
    output: str = "Done."
    executed_at: datetime | None = None

    @property
    def auto(self) -> bool:
        return self.tier != "approval"

    @property
    def key(self) -> str:
        return f"run-bench-{self.run_id}-call-{self.id}"

    def row(self) -> tuple:
        """The approvals_toolcall row, in the order of ROW_COLUMNS["toolcall"]."""
        decided = json.dumps(self.decided_args) if self.decided_args is not None else None
        expires_at = None if self.auto else self.at + timedelta(hours=1)
        return (
            self.id, self.run_id, self.message_id, f"call_{self.id}", self.tool, json.dumps(self.args),
            json.dumps(self.args), args_hash(self.args), self.tier, self.status, json.dumps(self.policy), 1,
            self.description, json.dumps(self.facts), "The customer reports damage.", "", expires_at, decided,
            self.output, True, self.executed_at, self.executed_at, self.at, "", 1, "", "{}",
        )  # fmt: skip


class Seeder:
    def __init__(self, *, events: int, calls: int, days: int, seed: int, reviewers: int):
        self.rng = random.Random(seed)
        self.target_events, self.target_calls = events, calls
        self.runs = max(1, calls // 4)
        self.start = datetime.now(UTC) - timedelta(days=days)
        self.interval = timedelta(days=days) / self.runs
        self.reviewers = reviewers
        self.prev_hash = GENESIS_HASH
        self.event_id = self.call_id = self.message_id = self.decision_id = 0
        self.rows = {name: [] for name in ROW_COLUMNS}
        self.events_written = 0

    # --- people ---------------------------------------------------------------------------

    def people(self):
        User = get_user_model()
        demo_data.setup_roles()
        reviewers = Group.objects.get(name="reviewers")
        self.reviewer_ids = []
        for i in range(self.reviewers):
            user, _ = User.objects.get_or_create(username=f"reviewer{i + 1:02d}")
            user.groups.add(reviewers)
            self.reviewer_ids.append(
                (user.pk, user.username, 1.2 if i < 2 else 25.0)
            )  # seconds to read; the first two approve in a blink
        self.requester, _ = User.objects.get_or_create(username="ops-agent")
        auditor, created = User.objects.get_or_create(username="auditor", defaults={"is_staff": True})
        auditor.groups.add(Group.objects.get(name="auditors"))
        self.auditor = auditor
        self.shadow_rule, _ = PolicyRule.objects.get_or_create(
            name="Refunds up to $50 (shadow)",
            defaults={
                "tool_name": "issue_refund",
                "field": "amount",
                "operator": "<=",
                "value": 50,
                "outcome": "run",
                "shadow": True,
            },
        )

    # --- rows -----------------------------------------------------------------------------

    def event(self, copy, kind, when, *, run_id, call_id=None, actor=None, payload=None):
        actor_id, actor_label = actor if actor else (None, "system")
        payload = _json_safe(payload)
        self.event_id += 1
        digest = event_hash(
            run_id=run_id, tool_call_id=call_id, kind=kind, actor_id=actor_id, actor_label=actor_label,
            payload=payload, created_at=when, prev_hash=self.prev_hash,
        )  # fmt: skip
        copy.write_row(
            (
                self.event_id,
                run_id,
                call_id,
                kind,
                actor_id,
                actor_label,
                json.dumps(payload, ensure_ascii=False),
                when,
                self.prev_hash,
                digest,
            )
        )
        self.prev_hash = digest
        self.events_written += 1

    def arguments(self, tool, order, customer):
        email = customer.lower().replace(" ", ".") + "@example.com"
        return {
            "get_order_status": {"order_id": order},
            "lookup_customer": {"query": customer},
            "add_order_note": {"order_id": order, "text": "Customer called about the delivery."},
            "issue_refund": {
                "order_id": order,
                "amount": round(self.rng.uniform(5, 400), 2),
                "reason": "Item arrived broken",
            },
            "send_email": {
                "to": email,
                "subject": "About your order",
                "body": f"Hi {customer.split()[0]}, your refund is on its way.",
            },
        }[tool], email

    def run(self, copy: Copy, *, index: int, calls_here: int, padding: int) -> None:
        run_id = index + 1
        t = self.start + self.interval * index
        step = self.interval * 0.8 / (calls_here * 3 + 4 + padding)
        customer = self.rng.choice(CUSTOMERS)
        order = f"A-{self.rng.randrange(1000, 10000)}"
        request = f"{customer} says order {order} arrived broken; please refund and let them know."
        self.run_started(copy, run_id=run_id, at=t, request=request, padding=padding)
        assistant = self.messages(run_id=run_id, at=t, request=request)
        for _ in range(calls_here):
            t += step
            self.call(copy, run_id=run_id, message_id=assistant, at=t, step=step, customer=customer, order=order)
            t += step * 3
        for k in range(padding):
            t += step
            self.event(copy, "resumed", t, run_id=run_id, payload={"step": k + 2})
        self.event(copy, "completed", t + step, run_id=run_id, payload={"steps": 2 + padding})
        self.last = (run_id, t + step)

    def run_started(self, copy: Copy, *, run_id: int, at: datetime, request: str, padding: int) -> None:
        """The run's row (finished when 80 % of its interval is over) and its first event."""
        public_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        finished_at = at + self.interval * 0.8
        self.rows["run"].append((
            run_id, public_id, "support", request, self.requester.pk, "completed", 2 + padding, 12, False, "", False,
            at, finished_at, finished_at,
        ))  # fmt: skip
        self.event(
            copy,
            "run_started",
            at,
            run_id=run_id,
            actor=(self.requester.pk, "ops-agent"),
            payload={"agent": "support", "request": request, "dry_run": False},
        )

    def messages(self, *, run_id: int, at: datetime, request: str) -> int:
        """The user's request and the assistant's reply that carries the calls; returns the reply's id."""
        self.message_id += 1
        self.rows["message"].append((self.message_id, run_id, 0, "user", request, "[]", "", at))
        self.message_id += 1
        self.rows["message"].append((self.message_id, run_id, 1, "assistant", "I'll look into it.", "[]", "", at))
        return self.message_id

    def call(
        self, copy: Copy, *, run_id: int, message_id: int, at: datetime, step: timedelta, customer: str, order: str
    ) -> None:
        call = self.propose(run_id=run_id, message_id=message_id, at=at, step=step, customer=customer, order=order)
        self.proposal_event(copy, call)
        if not call.auto:
            self.review(copy, call)
        if call.decided_args is not None and call.status == "executed":
            self.execute(copy, call)
        if call.shadowed:
            verdict_seen = "" if call.auto else call.verdict
            agreed = None if call.auto else ShadowResult.agreement("run", call.verdict)
            shadow_id = len(self.rows["shadowresult"]) + 1
            self.rows["shadowresult"].append(
                (shadow_id, self.shadow_rule.pk, call.id, "run", verdict_seen, agreed, call.at)
            )
        self.rows["toolcall"].append(call.row())

    def propose(
        self, *, run_id: int, message_id: int, at: datetime, step: timedelta, customer: str, order: str
    ) -> SeededCall:
        """Picks the tool and its arguments; the policy runs it by its tier or sends it for review."""
        self.call_id += 1
        tool, tier = self.rng.choices([(name, tier) for name, tier, _ in TOOLS], weights=[w for *_, w in TOOLS])[0]
        args, email = self.arguments(tool, order, customer)
        return SeededCall(
            id=self.call_id,
            run_id=run_id,
            message_id=message_id,
            at=at,
            step=step,
            tool=tool,
            tier=tier,
            args=args,
            facts=customer_facts(tier, customer, email),
            description=f"{tool.replace('_', ' ').capitalize()} for {customer} on order {order}",
            policy={
                "action": "run" if tier != "approval" else "review",
                "reason": f"{tier} tier",
                "rule_id": None,
                "required_approvals": 1,
            },
            shadowed=tool == "issue_refund" and args["amount"] <= 50,
            decided_args=args,
        )

    def proposal_event(self, copy: Copy, call: SeededCall) -> None:
        """auto_run for a call its tier lets run, proposed for one that waits for a reviewer."""
        shadow = []
        if call.shadowed:
            shadow = [{"rule": self.shadow_rule.pk, "name": self.shadow_rule.name, "outcome": "run"}]
        if call.auto:
            kind = "auto_run"
            payload = {
                "tool": call.tool,
                "arguments": call.args,
                "description": call.description,
                "policy": call.policy,
                "facts": call.facts,
                "shadow": shadow,
            }
        else:
            kind = "proposed"
            payload = {
                "tool": call.tool,
                "arguments": call.args,
                "arguments_hash": args_hash(call.args),
                "description": call.description,
                "facts": call.facts,
                "policy": call.policy,
                "reasoning": "The customer reports damage; a refund and a note are due.",
                "shadow": shadow,
            }
        self.event(copy, kind, call.at, run_id=call.run_id, call_id=call.id, payload=payload)

    def review(self, copy: Copy, call: SeededCall) -> None:
        verdict = self.rng.choices([v for v, _ in VERDICTS], weights=[w for _, w in VERDICTS])[0]
        if verdict == "expire":
            self.expire(copy, call)
        else:
            self.decide(copy, call, verdict=verdict)

    def expire(self, copy: Copy, call: SeededCall) -> None:
        """Nobody decided in time: the system rejects the call."""
        expired_at = call.at + call.step * 0.9
        call.verdict, call.status, call.decided_args = "expire", "expired", None
        call.output = f"Rejected by the system: {EXPIRY_REASON}."
        self.decision_id += 1
        self.rows["decision"].append(
            (self.decision_id, call.id, None, "expire", None, "", EXPIRY_REASON, True, expired_at, "", 1)
        )
        payload = {"reason": EXPIRY_REASON}
        self.event(copy, "expired", expired_at, run_id=call.run_id, call_id=call.id, payload=payload)

    def reviewer_opens(self, copy: Copy, call: SeededCall) -> tuple[tuple[int, str], datetime]:
        """A reviewer opens the call; returns who (id, username) and when they decide."""
        reviewer_id, name, reading = self.rng.choice(self.reviewer_ids)
        # In the queue a while, then opened (a claim, most of the time), then read and decided.
        waited = self.rng.lognormvariate(0, 0.8) * 20
        read = self.rng.lognormvariate(0, 0.5) * reading
        scale = min(1.0, call.step.total_seconds() * 0.9 / (waited + read))
        opened_at = call.at + timedelta(seconds=waited * scale)
        if self.rng.random() < 0.8:
            self.event(
                copy,
                "review_claimed",
                opened_at,
                run_id=call.run_id,
                call_id=call.id,
                actor=(reviewer_id, name),
                payload={"until": opened_at + timedelta(minutes=5)},
            )
        return (reviewer_id, name), opened_at + timedelta(seconds=read * scale)

    def decide(self, copy: Copy, call: SeededCall, *, verdict: str) -> None:
        """A reviewer approves, halves a refund (an edit) or rejects."""
        reviewer, decided_at = self.reviewer_opens(copy, call)
        if verdict == "edit" and call.tool == "issue_refund":
            call.decided_args = {**call.args, "amount": round(call.args["amount"] / 2, 2)}
        elif verdict == "edit":
            verdict = "approve"
        reason = "Too much for a first refund" if verdict == "reject" else ""
        if verdict == "reject":
            call.decided_args = None
            call.status, call.output = "rejected", f"Rejected by reviewer: {reason}"
        call.verdict = verdict
        decided = call.decided_args
        decided_json = json.dumps(decided) if decided is not None else None
        decided_hash = args_hash(decided) if decided is not None else ""
        self.decision_id += 1
        self.rows["decision"].append((
            self.decision_id, call.id, reviewer[0], verdict, decided_json, decided_hash, reason, True, decided_at,
            "", 1,
        ))  # fmt: skip
        self.decided_event(copy, call, reviewer=reviewer, at=decided_at, reason=reason)

    def decided_event(
        self, copy: Copy, call: SeededCall, *, reviewer: tuple[int, str], at: datetime, reason: str
    ) -> None:
        decided = call.decided_args
        payload = {
            "verdict": call.verdict,
            "arguments_shown_hash": args_hash(call.args),
            "arguments": decided,
            "arguments_hash": args_hash(decided) if decided is not None else "",
            "reason": reason,
            "guidance": "",
            "round": 1,
            "final": True,
            "approvals": "1 of 1",
            "facts": None,
        }
        self.event(copy, "decided", at, run_id=call.run_id, call_id=call.id, actor=reviewer, payload=payload)

    def execute(self, copy: Copy, call: SeededCall) -> None:
        call.executed_at = call.at + call.step * 2
        self.event(
            copy,
            "executing",
            call.executed_at,
            run_id=call.run_id,
            call_id=call.id,
            payload={
                "arguments": call.decided_args,
                "arguments_hash": args_hash(call.decided_args),
                "idempotency_key": call.key,
                "dry_run": False,
            },
        )
        self.event(
            copy,
            "executed",
            call.executed_at + call.step * 0.5,
            run_id=call.run_id,
            call_id=call.id,
            payload={
                "arguments": call.decided_args,
                "idempotency_key": call.key,
                "output": call.output,
                "dry_run": False,
            },
        )

    # --- loading --------------------------------------------------------------------------

    def load(self) -> None:
        with transaction.atomic(), connection.cursor() as django_cursor:
            # No FK or append-only triggers while loading.
            django_cursor.execute("SET LOCAL session_replication_role = replica")
            django_cursor.execute("SET LOCAL synchronous_commit = off")
            cursor = django_cursor.cursor
            with cursor.copy(copy_statement("auditevent", EVENT_COLUMNS)) as copy:
                self.generate(copy)
            for name, columns in ROW_COLUMNS.items():
                with cursor.copy(copy_statement(name, columns)) as copy:
                    for row in self.rows[name]:
                        copy.write_row(row)
            AuditHead.objects.update_or_create(pk=1, defaults={"last_hash": self.prev_hash})
            for model in (*ROW_COLUMNS, "auditevent"):
                table = f"approvals_{model}"
                django_cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                )
        with connection.cursor() as django_cursor:
            django_cursor.execute("VACUUM ANALYZE")

    def generate(self, copy: Copy) -> None:
        """Every run and its calls: the audit events into copy, the other rows into self.rows."""
        calls_per_run = [
            self.target_calls // self.runs + (1 if i < self.target_calls % self.runs else 0) for i in range(self.runs)
        ]
        for i, calls_here in enumerate(calls_per_run):
            # Spread the events the call lifecycles do not fill over the remaining runs.
            runs_left = self.runs - i
            expected = calls_here * 3.5 + 3
            padding = max(0, round((self.target_events - self.events_written - expected * runs_left) / runs_left))
            self.run(copy, index=i, calls_here=calls_here, padding=padding)
        run_id, when = self.last
        while self.events_written < self.target_events:  # the estimate's remainder, on the last run
            self.event(copy, "resumed", when, run_id=run_id, payload={"step": self.events_written})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=180, help="Spread the record over this many days up to now.")
    parser.add_argument("--reviewers", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    options = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("bench/seed.py loads PostgreSQL with COPY: set DATABASE_URL to an empty PostgreSQL database.")
    started = time.monotonic()
    call_command("migrate", verbosity=0)
    if AuditEvent.objects.exists():
        sys.exit("The database already holds audit events; seed an empty one.")
    seeder = Seeder(
        events=options.events, calls=options.calls, days=options.days, seed=options.seed, reviewers=options.reviewers
    )
    seeder.people()
    seeder.load()
    print(
        f"Seeded {seeder.runs:,} runs, {seeder.call_id:,} tool calls, {seeder.decision_id:,} decisions and "
        f"{seeder.events_written:,} audit events in {time.monotonic() - started:.0f} s; head {seeder.prev_hash}"
    )


if __name__ == "__main__":
    main()
