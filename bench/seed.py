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
from seed_calls import CallLifecycle  # noqa: E402

from approvals.audit import _json_safe  # noqa: E402
from approvals.lib.hashing import event_hash  # noqa: E402
from approvals.models import (  # noqa: E402
    GENESIS_HASH,
    AuditEvent,
    AuditHead,
    PolicyRule,
)
from shop import demo_data  # noqa: E402

CUSTOMERS = [
    f"{first} {last}"
    for first in ("Dana", "Lee", "Maria", "Sam", "Ada", "Ravi", "Noor", "Jon", "Ines", "Kai")
    for last in ("Smith", "Wong", "Garcia", "Okafor", "Novak", "Ito", "Berg", "Haddad")
]

# COPY column lists. The audit events are written while the record is generated;
# the other tables' rows are kept in Seeder.rows and loaded afterwards, in this order.
EVENT_COLUMNS = (
    "id", "run_id", "tool_call_id", "kind", "actor_id", "actor_label", "payload", "created_at", "prev_hash", "hash",
    "chain",
)  # fmt: skip
ROW_COLUMNS = {
    "run": (
        "id", "public_id", "agent", "request", "requested_by_id", "status", "step_count", "max_steps", "thinking",
        "last_error", "dry_run", "created_at", "updated_at", "finished_at", "advanced_by",
    ),
    "message": ("id", "run_id", "seq", "role", "content", "tool_calls", "tool_call_id", "created_at"),
    "toolcall": (
        "id", "run_id", "message_id", "call_id", "tool_name", "arguments", "raw_arguments", "arguments_hash", "tier",
        "status", "policy", "required_approvals", "description", "facts", "reasoning", "user_request", "expires_at",
        "approved_arguments", "output", "output_recorded", "claimed_at", "executed_at", "created_at",
        "edited_description", "review_round", "returned_reason", "changed_facts", "agent_facts", "kind", "question",
        "revision",
    ),
    "decision": (
        "id", "tool_call_id", "reviewer_id", "verdict", "arguments", "arguments_hash", "reason", "final", "created_at",
        "guidance", "round",
    ),
    "shadowresult": ("id", "rule_id", "tool_call_id", "outcome", "verdict", "agreed", "created_at"),
}  # fmt: skip


def copy_statement(model: str, columns: tuple[str, ...]) -> str:
    return f"COPY approvals_{model} ({', '.join(columns)}) FROM STDIN"


class Seeder(CallLifecycle):
    def __init__(self, *, events: int, calls: int, days: int, seed: int, reviewers: int):
        self.rng = random.Random(seed)
        self.target_events, self.target_calls = events, calls
        self.runs = max(1, calls // 4)
        self.start = datetime.now(UTC) - timedelta(days=days)
        self.interval = timedelta(days=days) / self.runs
        self.reviewers = reviewers
        self.prev_hash = GENESIS_HASH  # of the run being generated: each run has a chain of its own
        self.heads: dict[int, tuple[str, int]] = {}  # per run chain: its last hash and length
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
                run_id,
            )
        )
        self.prev_hash = digest
        self.heads[run_id] = (digest, self.heads.get(run_id, ("", 0))[1] + 1)
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
        self.prev_hash = GENESIS_HASH
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
            at, finished_at, finished_at, "local",
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
            with cursor.copy("COPY approvals_audithead (chain, last_hash, seq, anchored) FROM STDIN") as copy:
                for chain, (last_hash, seq) in self.heads.items():
                    copy.write_row((chain, last_hash, seq, False))
            AuditHead.objects.get_or_create(chain=0)  # the global chain, empty
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
