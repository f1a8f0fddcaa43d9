"""The demo's tool that asks: which of a customer's orders a request is about.

Read-only. A customer with one order gets it at once; with several, the call stops and asks a person,
showing the orders (date, total, items) and offering their numbers to choose from. The answer is the
tool's output, as the sentence `chosen_order` writes.
"""

import json

from pydantic import Field

from approvals.tools import Ask, ToolContext, ToolError

from .models import Customer
from .tools import EMAIL_ADDRESS, Args, money


class ChooseOrderArgs(Args):
    email: str = Field(pattern=EMAIL_ADDRESS, max_length=254, description="The customer's email address.")


def _row(order) -> dict:
    placed = order.placed_at.date().isoformat()
    return {"order": order.number, "date": placed, "total": money(order.total), "items": order.items}


def choose_order(args: ChooseOrderArgs, ctx: ToolContext) -> str | Ask:
    customer = Customer.objects.filter(email__iexact=args.email).first()
    if customer is None:
        raise ToolError(f"there is no customer with the email {args.email}")
    orders = list(customer.orders.order_by("-placed_at", "-number"))
    if not orders:
        raise ToolError(f"{customer.name} has no orders")
    if len(orders) == 1:
        return json.dumps({"order_id": orders[0].number, "chosen_by": "the customer's only order"})
    rows = [_row(order) for order in orders]
    schema = {
        "type": "object",
        "properties": {
            "order_id": {
                "type": "string",
                "title": "Order",
                "description": "The order the customer's request is about.",
                "enum": [order.number for order in orders],
            }
        },
        "required": ["order_id"],
        "additionalProperties": False,
    }
    labels = {row["order"]: f"{row['order']} · {row['date']} · {row['total']} · {row['items']}" for row in rows}
    payload = {"customer": f"{customer.name} <{customer.email}>", "rows": rows, "labels": labels}
    return Ask(f"Which of {customer.name}'s orders is the request about?", schema, payload)


def chosen_order(args: ChooseOrderArgs, answer: dict) -> str:
    return json.dumps({"order_id": answer["order_id"], "chosen_by": "a reviewer"})


def describe_choice(args: ChooseOrderArgs) -> str:
    return f"Find which order of {args.email} the request is about"
