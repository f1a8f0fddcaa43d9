"""Everything that writes the remote agents' side of the record, keyword-only, each write atomic.

- identities: agents and their user accounts
- declarations: tools declared once, versioned
- calls: proposed (idempotently), claimed (exactly one caller wins), reported
- turns: a model turn the agent asks to have reviewed before its model answers
- webhooks: registered (the secret shown once), redelivered (remote/deliveries.py sends, remote/resume.py queues)

Other apps (the MCP gateway, agui/) use remote/ through the names exported here: besides the services, a token's
agent, a call's page, waiting for a decision, and the errors the services raise.
"""

from ..deliveries import delivery_attempt
from ..errors import ApiError, Invalid
from ..keys import execution_key
from ..serialize import call_url
from ..tokens import SHOWN, agent_for_token
from ..waiting import Waiter
from .calls import call_claim, call_lease_renew, call_propose, call_report
from .declarations import tool_declare
from .identities import agent_get_or_create
from .turns import turn_propose
from .webhooks import delivery_redeliver, webhook_create

__all__ = [
    "ApiError",
    "Invalid",
    "SHOWN",
    "Waiter",
    "agent_for_token",
    "agent_get_or_create",
    "call_url",
    "call_claim",
    "call_lease_renew",
    "call_propose",
    "call_report",
    "delivery_attempt",
    "delivery_redeliver",
    "execution_key",
    "tool_declare",
    "turn_propose",
    "webhook_create",
]
