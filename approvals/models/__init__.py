"""The system of record: runs, their transcript, tool calls, decisions, policy, audit.

This app knows nothing about language models. A run is a conversation in the
OpenAI chat format because that is the lingua franca of agents, not because
approvals/ calls a model.
"""

from ..tiers import Tier
from .audit import GENESIS_HASH, GLOBAL_CHAIN, HASHED_FIELDS, ROUTINE_KINDS, AuditEvent, AuditHead
from .calls import Decision, ToolCall
from .policy import PolicyRule, PolicyStamp, ShadowResult, ToolSetting
from .runs import Message, Run
from .turns import TurnRule, TurnShadow

__all__ = [
    "GENESIS_HASH",
    "GLOBAL_CHAIN",
    "ROUTINE_KINDS",
    "HASHED_FIELDS",
    "AuditEvent",
    "AuditHead",
    "Decision",
    "Message",
    "PolicyRule",
    "PolicyStamp",
    "Run",
    "ShadowResult",
    "Tier",
    "ToolCall",
    "ToolSetting",
    "TurnRule",
    "TurnShadow",
]
