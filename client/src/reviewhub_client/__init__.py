"""ReviewHub's Python client: the agent API v1 (sync `ReviewHub`, async `AsyncReviewHub`), webhook verification,
and adapters for LangGraph (`for_langgraph`), the OpenAI Agents SDK (`for_openai_agents`) and Pydantic AI
(`for_pydantic_ai`), each imported on its own so only the framework you use needs to be installed."""

from .aio import AsyncReviewHub
from .client import Execution, ReviewHub
from .errors import ApiError, NotApproved, OutcomeUnknown, ReviewHubError, ToolFailed, WebhookInvalid
from .gate import Gate
from .lease import execution_key
from .models import Call, Change, Claim, Decision, Result, Tool, Webhook, WebhookEvent
from .store import Store
from .webhooks import verify_webhook

__all__ = [
    "ApiError",
    "AsyncReviewHub",
    "Call",
    "Change",
    "Claim",
    "Decision",
    "Execution",
    "Gate",
    "NotApproved",
    "OutcomeUnknown",
    "Result",
    "ReviewHub",
    "ReviewHubError",
    "Store",
    "Tool",
    "ToolFailed",
    "Webhook",
    "WebhookEvent",
    "WebhookInvalid",
    "execution_key",
    "verify_webhook",
]
