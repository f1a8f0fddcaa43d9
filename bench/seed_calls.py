"""The life of one generated tool call for bench/seed.py: proposed, reviewed or expired, decided,
executed, with the audit events each step writes. Imported by seed.py after Django is set up."""

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from psycopg import Copy

from approvals.lib.hashing import args_hash
from approvals.models import ShadowResult

TOOLS = [  # name, tier, weight
    ("get_order_status", "read_only", 25),
    ("lookup_customer", "read_only", 10),
    ("add_order_note", "reversible", 10),
    ("issue_refund", "approval", 35),
    ("send_email", "approval", 20),
]
VERDICTS = [("approve", 60), ("edit", 10), ("reject", 20), ("expire", 10)]
EXPIRY_REASON = "no decision within 1 h"


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
            self.output, True, self.executed_at, self.executed_at, self.at, "", 1, "", "{}", "{}", "call", "{}", 1,
        )  # fmt: skip


class CallLifecycle:
    """Seeder's steps for one call; they use the Seeder's state (ids, rows, the event writer)."""

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
