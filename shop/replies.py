"""The support agent's checkpoint "Reply to the customer": its final answer is a draft a person approves,
edits or sends back; once approved, the reply is emailed to the customer of the order the conversation is
about, through the same exactly-once path as any approved tool call (the call's idempotency key)."""

import re

from pydantic import Field

from agents.agents import Checkpoint
from approvals.models import Tier
from approvals.tools import CHECKPOINT, Tool, ToolContext

from . import tools as t
from .models import Order

NAME, TITLE = "reply_to_customer", "Reply to the customer"
ORDER = re.compile(r"\bA-[0-9]{4}\b")
NO_CUSTOMER = "none found in the conversation: the reply is the run's answer, and is not emailed"


class ReplyArgs(t.Args):
    draft: str = Field(min_length=1, max_length=10000, description="The reply to the customer.")
    order_id: t.OrderId | None = Field(default=None, description="The order the conversation is about.")


def conversation_order(messages: list[dict]) -> dict:
    """The order the conversation is about, found by code: the first named in the request (or a later user
    message), else in the arguments of a call the model made. The facts then say whose order it is."""
    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    calls = [c["function"].get("arguments") or "" for m in messages for c in m.get("tool_calls") or []]
    found = next((match.group(0) for text in users + calls if (match := ORDER.search(text))), None)
    return {"order_id": found} if found else {}


def _order(args: ReplyArgs) -> Order | None:
    if not args.order_id:
        return None
    return Order.objects.select_related("customer").filter(number=args.order_id).first()


def reply_facts(args: ReplyArgs) -> dict:
    """Who the reply goes to, from the shop's records."""
    order = _order(args)
    if order is None:
        return {"customer": NO_CUSTOMER}
    customer = order.customer
    return {"customer": customer.name, "customer_email": customer.email, "order": order.number}


def _email(args: ReplyArgs, order: Order) -> t.SendEmailArgs:
    subject = f"About your order {order.number}"
    return t.SendEmailArgs(to=order.customer.email, subject=subject, body=args.draft, order_id=order.number)


def send_reply(args: ReplyArgs, ctx: ToolContext) -> str:
    """Email the approved reply to the order's customer, once per checkpoint call (its idempotency key)."""
    order = _order(args)
    if order is None:
        return "No customer was found in the conversation: the reply was not emailed."
    return t.send_email(_email(args, order), ctx)


def simulate_reply(args: ReplyArgs) -> str:
    order = _order(args)
    if order is None:
        return "[dry run] The reply would be the run's answer; no customer to email. Nothing was sent."
    return t.simulate_email(_email(args, order))


TOOL = Tool(
    name=NAME,
    description=f"Checkpoint: {TITLE}. Held by the loop before the final answer; never offered to the model.",
    args_model=ReplyArgs,
    tier=Tier.APPROVAL,
    func=send_reply,
    describe=lambda a: TITLE,
    facts=reply_facts,
    simulate=simulate_reply,
    material_facts=("customer_email",),
    key_fields=("order_id",),
    key_facts=("customer",),
    kind=CHECKPOINT,
)

CHECKPOINT_REPLY = Checkpoint(name=NAME, title=TITLE, about=conversation_order)
