"""The API's bodies: pydantic schemas (like the tools'), unknown fields refused, types strict."""

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from approvals.tools import DECISIONS, DecisionName

from .models import TOOL_NAME_PATTERN

TierName = Literal["read_only", "reversible", "approval", "forbidden"]
Status = Literal[
    "pending",
    "approved",
    "rejected",
    "expired",
    "cancelled",
    "executing",
    "executed",
    "failed",
    "forbidden",
    "invalid",
    "undone",
    "outcome_unknown",
]
TEXT = 100_000


class In(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)


class ToolIn(In):
    description: str = Field("", max_length=10_000)
    input_schema: dict[str, Any]
    tier: TierName
    description_template: str = Field("", max_length=2_000)
    decisions: list[DecisionName] = Field(default_factory=lambda: list(DECISIONS), min_length=1, max_length=4)
    key_fields: list[str] = Field(default_factory=list, max_length=20)
    idempotent: bool = False


class ToolOut(Schema):
    name: str
    version: int
    description: str
    input_schema: dict[str, Any]
    tier: TierName
    description_template: str
    decisions: list[DecisionName]
    key_fields: list[str]
    idempotent: bool
    created_at: datetime


class QuestionIn(In):
    """The agent's tool asks a person: the answer must fit `schema` (a JSON schema); `payload` is shown beside it."""

    prompt: str = Field(min_length=1, max_length=2_000)
    schema_: dict[str, Any] = Field(alias="schema")
    payload: dict[str, Any] = Field(default_factory=dict)


class CallIn(In):
    # "checkpoint": a named stage of the agent's work (its tool declares a string "draft"): a reviewer
    # approves, edits or sends back the draft (docs/api.md, Checkpoints).
    kind: Literal["call", "checkpoint"] = "call"
    thread_id: str = Field(min_length=1, max_length=200)
    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    arguments: dict[str, Any]
    reasoning: str = Field("", max_length=TEXT)
    user_request: str = Field("", max_length=TEXT)
    facts: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str = Field(min_length=1, max_length=200)
    question: QuestionIn | None = None


class ChangeOut(Schema):
    field: str
    before: Any = None
    after: Any = None


class TurnIn(In):
    thread_id: str = Field(min_length=1, max_length=200)
    step: int = Field(ge=1, le=100_000)
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=5_000)
    transcript_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    user_request: str = Field("", max_length=TEXT)
    idempotency_key: str = Field(min_length=1, max_length=200)


class DecisionOut(Schema):
    # note, reply: a model turn's decisions (continue is approve); the text is in guidance. answer: a question's
    verdict: Literal["approve", "edit", "reject", "respond", "expire", "note", "reply", "answer"]
    arguments: dict[str, Any] | None
    changes: list[ChangeOut]
    reason: str
    guidance: str
    reviewer: str | None
    decided_at: datetime
    execution_key: str | None
    answer: Any = None  # a question's answer (verdict "answer")


class ResultOut(Schema):
    ok: bool
    output: str
    reported_at: datetime


class CallOut(Schema):
    id: int
    kind: Literal["call", "turn", "checkpoint", "question"]
    thread_id: str
    tool: str
    tool_version: int
    arguments: dict[str, Any] | None
    revision: int
    revision_of: int | None
    status: Status
    decision: DecisionOut | None
    result: ResultOut | None
    created_at: datetime
    expires_at: datetime | None
    lease_expires_at: datetime | None = None  # while executing: when the claim lapses unless renewed
    url: str
    question: dict[str, Any] | None = None  # what the call asks a person, if it asks


class ClaimIn(In):
    execution_key: str = Field(min_length=1, max_length=100)


class ClaimOut(Schema):
    claimed: bool
    call: CallOut
    lease_seconds: int  # the claim lapses this long after the claim or the last renewal (POST .../lease)


class ResultIn(In):
    execution_key: str = Field(min_length=1, max_length=100)
    ok: bool
    output: str = Field("", max_length=TEXT)


class WebhookIn(In):
    url: str = Field(min_length=1, max_length=2_000)


class WebhookOut(Schema):
    id: int
    url: str
    secret: str


class ErrorOut(Schema):
    detail: str
    errors: dict[str, list[str]]
