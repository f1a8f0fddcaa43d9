"""What the agent API sends and receives (docs/api.md), as pydantic models.

Models ignore fields they do not know, so a newer server does not break an older client."""

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Tier = Literal["read_only", "reversible", "approval", "forbidden"]
# A newer server may add statuses or verdicts: they are read as plain strings, these are the ones known today.
VERDICTS = ("approve", "edit", "reject", "respond", "expire", "answer")
STATUSES = (
    "pending", "approved", "rejected", "expired", "cancelled", "executing", "executed", "failed", "outcome_unknown",
)  # fmt: skip
UNKNOWN = "outcome_unknown"  # the claim lapsed without a report: a reviewer says whether the tool ran

DONE = frozenset({"executed", "failed"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Tool(_Model):
    """A tool as the agent declared it; `version` grows with each changed declaration."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    tier: Tier = "approval"
    description_template: str | None = None
    decisions: list[str] | None = None
    key_fields: list[str] | None = None
    idempotent: bool = False  # a second run with the same execution key does no harm
    version: int | None = None


class Change(_Model):
    field: str
    before: Any = None
    after: Any = None


class Decision(_Model):
    """A reviewer's (or the policy's) decision: what to execute, or why not."""

    verdict: str
    arguments: dict[str, Any] | None = None
    changes: list[Change] = Field(default_factory=list)
    reason: str = ""
    guidance: str = ""
    reviewer: str | None = None
    decided_at: datetime | None = None
    execution_key: str | None = None
    answer: Any = None  # a question's answer (verdict "answer"): the tool's output

    @property
    def approved(self) -> bool:
        """Approved as proposed or with the reviewer's edit: the call may run with `arguments`."""
        return self.verdict in ("approve", "edit")

    def why(self) -> str:
        """The reviewer's reason and guidance, both, as one text ("" when they gave neither)."""
        reason = self.reason.strip()
        if reason and reason[-1] not in ".!?":
            reason += "."
        guidance = f"Guidance from the reviewer: {self.guidance.strip()}" if self.guidance.strip() else ""
        return " ".join(part for part in (reason, guidance) if part)

    def tool_message(self) -> str:
        """What the model should read in place of the tool's result when the call did not run."""
        if self.verdict == "answer":
            return json.dumps({"answer": self.answer}, ensure_ascii=False)
        if self.verdict == "expire":
            return "Not executed: nobody decided this call before it expired."
        why = self.why()
        if self.verdict == "respond":
            return f"The reviewer did not run this call. {why}" if why else "The reviewer did not run this call."
        return f"Rejected by reviewer: {why}" if why else "Rejected by reviewer"


class Result(_Model):
    ok: bool
    output: str = ""
    reported_at: datetime | None = None


class Call(_Model):
    id: int
    kind: str = "call"  # call, checkpoint, question, turn
    thread_id: str = ""
    tool: str
    tool_version: int | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    revision: int = 1  # 2, 3, ...: proposed again after a reviewer rejected (or responded to) call `revision_of`
    revision_of: int | None = None
    status: str
    decision: Decision | None = None
    result: Result | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    lease_expires_at: datetime | None = None  # while executing: when the claim lapses unless renewed
    url: str = ""
    question: dict[str, Any] | None = None  # what the call asks a person, if it asks

    @property
    def pending(self) -> bool:
        return self.status == "pending"


class Claim(_Model):
    """The answer to a claim: exactly one caller gets claimed=True and runs the tool."""

    claimed: bool
    call: Call
    lease_seconds: int = 6  # renew (ReviewHub.renew) well within this while the tool runs; execute_once does


class Webhook(_Model):
    id: int
    url: str
    secret: str = ""


class WebhookEvent(_Model):
    type: str
    timestamp: datetime | None = None
    data: Call
