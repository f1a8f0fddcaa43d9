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

from agents import demo_data  # noqa: E402
from approvals.audit import _json_safe  # noqa: E402
from approvals.models import GENESIS_HASH, AuditEvent, AuditHead, PolicyRule, ShadowResult, args_hash, event_hash  # noqa: E402

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
        self.rows = {"run": [], "message": [], "toolcall": [], "decision": [], "shadowresult": []}
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

    def run(self, copy, index, calls_here, padding):
        run_id = index + 1
        t = self.start + self.interval * index
        step = self.interval * 0.8 / (calls_here * 3 + 4 + padding)
        customer = self.rng.choice(CUSTOMERS)
        order = f"A-{self.rng.randrange(1000, 10000)}"
        request = f"{customer} says order {order} arrived broken; please refund and let them know."
        self.rows["run"].append(
            (
                run_id,
                uuid.UUID(int=self.rng.getrandbits(128), version=4),
                "support",
                request,
                self.requester.pk,
                "completed",
                2 + padding,
                12,
                False,
                "",
                False,
                t,
                t + self.interval * 0.8,
                t + self.interval * 0.8,
            )
        )
        self.event(
            copy,
            "run_started",
            t,
            run_id=run_id,
            actor=(self.requester.pk, "ops-agent"),
            payload={"agent": "support", "request": request, "dry_run": False},
        )
        self.message_id += 1
        self.rows["message"].append((self.message_id, run_id, 0, "user", request, "[]", "", t))
        self.message_id += 1
        assistant = self.message_id
        self.rows["message"].append((assistant, run_id, 1, "assistant", "I'll look into it.", "[]", "", t))
        for n in range(calls_here):
            t += step
            self.call(copy, run_id, assistant, n, t, step, customer, order)
            t += step * 3
        for k in range(padding):
            t += step
            self.event(copy, "resumed", t, run_id=run_id, payload={"step": k + 2})
        self.event(copy, "completed", t + step, run_id=run_id, payload={"steps": 2 + padding})
        self.last = (run_id, t + step)

    def call(self, copy, run_id, message_id, n, t, step, customer, order):
        self.call_id += 1
        call_id = self.call_id
        tool, tier = self.rng.choices([(name, tier) for name, tier, _ in TOOLS], weights=[w for *_, w in TOOLS])[0]
        args, email = self.arguments(tool, order, customer)
        facts = (
            {
                "customer": customer,
                "customer_email": email,
                "order_status": "delivered",
                "order_total": "$420.00",
                "already_refunded": "$0.00",
            }
            if tier == "approval"
            else {}
        )
        description = f"{tool.replace('_', ' ').capitalize()} for {customer} on order {order}"
        auto = tier != "approval"
        policy = {
            "action": "run" if auto else "review",
            "reason": f"{tier} tier",
            "rule_id": None,
            "required_approvals": 1,
        }
        key = f"run-bench-{run_id}-call-{call_id}"
        status, decided_args, decision_at, output, executed_at = "executed", args, None, "Done.", None
        shadowed = tool == "issue_refund" and args["amount"] <= 50
        shadow = [{"rule": self.shadow_rule.pk, "name": self.shadow_rule.name, "outcome": "run"}] if shadowed else []
        if auto:
            self.event(
                copy,
                "auto_run",
                t,
                run_id=run_id,
                call_id=call_id,
                payload={
                    "tool": tool,
                    "arguments": args,
                    "description": description,
                    "policy": policy,
                    "facts": facts,
                    "shadow": shadow,
                },
            )
        else:
            self.event(
                copy,
                "proposed",
                t,
                run_id=run_id,
                call_id=call_id,
                payload={
                    "tool": tool,
                    "arguments": args,
                    "arguments_hash": args_hash(args),
                    "description": description,
                    "facts": facts,
                    "policy": policy,
                    "reasoning": "The customer reports damage; a refund and a note are due.",
                    "shadow": shadow,
                },
            )
            verdict = self.rng.choices([v for v, _ in VERDICTS], weights=[w for _, w in VERDICTS])[0]
            if verdict == "expire":
                decision_at = t + step * 0.9
                self.decision_id += 1
                self.rows["decision"].append(
                    (
                        self.decision_id,
                        call_id,
                        None,
                        "expire",
                        None,
                        "",
                        "no decision within 1 h",
                        True,
                        decision_at,
                        "",
                        1,
                    )
                )
                self.event(
                    copy,
                    "expired",
                    decision_at,
                    run_id=run_id,
                    call_id=call_id,
                    payload={"reason": "no decision within 1 h"},
                )
                status, decided_args, output = "expired", None, "Rejected by the system: no decision within 1 h."
            else:
                reviewer_id, name, reading = self.rng.choice(self.reviewer_ids)
                # In the queue a while, then opened (a claim, most of the time), then read and decided.
                waited = self.rng.lognormvariate(0, 0.8) * 20
                read = self.rng.lognormvariate(0, 0.5) * reading
                scale = min(1.0, step.total_seconds() * 0.9 / (waited + read))
                opened_at = t + timedelta(seconds=waited * scale)
                decision_at = opened_at + timedelta(seconds=read * scale)
                if self.rng.random() < 0.8:
                    self.event(
                        copy,
                        "review_claimed",
                        opened_at,
                        run_id=run_id,
                        call_id=call_id,
                        actor=(reviewer_id, name),
                        payload={"until": opened_at + timedelta(minutes=5)},
                    )
                if verdict == "edit" and tool == "issue_refund":
                    decided_args = {**args, "amount": round(args["amount"] / 2, 2)}
                elif verdict == "edit":
                    verdict = "approve"
                reason = "Too much for a first refund" if verdict == "reject" else ""
                if verdict == "reject":
                    decided_args = None
                self.decision_id += 1
                self.rows["decision"].append(
                    (
                        self.decision_id,
                        call_id,
                        reviewer_id,
                        verdict,
                        json.dumps(decided_args) if decided_args is not None else None,
                        args_hash(decided_args) if decided_args is not None else "",
                        reason,
                        True,
                        decision_at,
                        "",
                        1,
                    )
                )
                self.event(
                    copy,
                    "decided",
                    decision_at,
                    run_id=run_id,
                    call_id=call_id,
                    actor=(reviewer_id, name),
                    payload={
                        "verdict": verdict,
                        "arguments_shown_hash": args_hash(args),
                        "arguments": decided_args,
                        "arguments_hash": args_hash(decided_args) if decided_args is not None else "",
                        "reason": reason,
                        "guidance": "",
                        "round": 1,
                        "final": True,
                        "approvals": "1 of 1",
                        "facts": None,
                    },
                )
                if verdict == "reject":
                    status, output = "rejected", f"Rejected by reviewer: {reason}"
        if decided_args is not None and status == "executed":
            executed_at = t + step * 2
            self.event(
                copy,
                "executing",
                executed_at,
                run_id=run_id,
                call_id=call_id,
                payload={
                    "arguments": decided_args,
                    "arguments_hash": args_hash(decided_args),
                    "idempotency_key": key,
                    "dry_run": False,
                },
            )
            self.event(
                copy,
                "executed",
                executed_at + step * 0.5,
                run_id=run_id,
                call_id=call_id,
                payload={"arguments": decided_args, "idempotency_key": key, "output": output, "dry_run": False},
            )
        if shadowed:
            verdict_seen = "" if auto else verdict
            agreed = None if auto else ShadowResult.agreement("run", verdict)
            self.rows["shadowresult"].append(
                (len(self.rows["shadowresult"]) + 1, self.shadow_rule.pk, call_id, "run", verdict_seen, agreed, t)
            )
        self.rows["toolcall"].append((
            call_id, run_id, message_id, f"call_{call_id}", tool, json.dumps(args), json.dumps(args), args_hash(args), tier, status,
            json.dumps(policy), 1, description, json.dumps(facts), "The customer reports damage.", "", None if auto else t + timedelta(hours=1),
            json.dumps(decided_args) if decided_args is not None else None, output, True, executed_at, executed_at, t,
            "", 1, "", "{}",
        ))  # fmt: skip

    # --- loading --------------------------------------------------------------------------

    def load(self):
        with transaction.atomic(), connection.cursor() as django_cursor:
            django_cursor.execute(
                "SET LOCAL session_replication_role = replica"
            )  # no FK or append-only triggers while loading
            django_cursor.execute("SET LOCAL synchronous_commit = off")
            cursor = django_cursor.cursor
            calls_per_run = [
                self.target_calls // self.runs + (1 if i < self.target_calls % self.runs else 0)
                for i in range(self.runs)
            ]
            columns = "id, run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash, hash"
            with cursor.copy(f"COPY approvals_auditevent ({columns}) FROM STDIN") as copy:
                for i, calls_here in enumerate(calls_per_run):
                    # Spread the events the call lifecycles do not fill over the remaining runs.
                    runs_left = self.runs - i
                    expected = calls_here * 3.5 + 3
                    padding = max(
                        0, round((self.target_events - self.events_written - expected * runs_left) / runs_left)
                    )
                    self.run(copy, i, calls_here, padding)
                run_id, when = self.last
                while self.events_written < self.target_events:  # the estimate's remainder, on the last run
                    self.event(copy, "resumed", when, run_id=run_id, payload={"step": self.events_written})
            tables = {
                "run": "approvals_run (id, public_id, agent, request, requested_by_id, status, step_count, max_steps, thinking, last_error, dry_run, created_at, updated_at, finished_at)",
                "message": "approvals_message (id, run_id, seq, role, content, tool_calls, tool_call_id, created_at)",
                "toolcall": "approvals_toolcall (id, run_id, message_id, call_id, tool_name, arguments, raw_arguments, arguments_hash, tier, status, policy, required_approvals, description, facts, reasoning, user_request, expires_at, approved_arguments, output, output_recorded, claimed_at, executed_at, created_at, edited_description, review_round, returned_reason, changed_facts)",
                "decision": "approvals_decision (id, tool_call_id, reviewer_id, verdict, arguments, arguments_hash, reason, final, created_at, guidance, round)",
                "shadowresult": "approvals_shadowresult (id, rule_id, tool_call_id, outcome, verdict, agreed, created_at)",
            }
            for name in ("run", "message", "toolcall", "decision", "shadowresult"):
                with cursor.copy(f"COPY {tables[name]} FROM STDIN") as copy:
                    for row in self.rows[name]:
                        copy.write_row(row)
            AuditHead.objects.update_or_create(pk=1, defaults={"last_hash": self.prev_hash})
            for table in (
                "approvals_run",
                "approvals_message",
                "approvals_toolcall",
                "approvals_decision",
                "approvals_shadowresult",
                "approvals_auditevent",
            ):
                django_cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                )
        with connection.cursor() as django_cursor:
            django_cursor.execute("VACUUM ANALYZE")


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
