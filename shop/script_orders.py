"""The scripted model's way with a request that names no order (shop/script.py calls it): ask choose_order
which of the customer's orders it is about, look the chosen order up, then propose refunding it."""

import json
import re

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
ORDER = re.compile(r"\bA-\d{4}\b")


def _call(name: str, arguments: dict) -> dict:
    return {"name": name, "arguments": arguments}


def plan_without_order(instruction: str) -> tuple[str, list[dict]] | None:
    """A refund asked by a customer who gives their email and no order: find out which order first."""
    text = instruction.lower()
    emails = EMAIL.findall(instruction)
    if "refund" not in text or ORDER.search(instruction) or not emails:
        return None
    email = emails[0].rstrip(".,;")
    return "The customer names no order; I'll find out which of theirs it is.", [
        _call("choose_order", {"email": email})
    ]


def _tools_called(message: dict) -> list[str]:
    return [(call.get("function") or {}).get("name", "") for call in message.get("tool_calls") or ()]


def follow_choice(messages: list[dict], outputs: list[str]) -> tuple[str, list[dict]] | None:
    """After choose_order: look the chosen order up; after that lookup: propose refunding its total."""
    steps = [m for m in messages if m.get("role") == "assistant" and m.get("tool_calls")]
    if not steps or len(outputs) != 1:
        return None
    last = _tools_called(steps[-1])
    if last == ["choose_order"]:
        chosen = ORDER.findall(outputs[0])
        if not chosen:
            return None  # declined, nobody answered, or no such customer: the summary says so
        return f"The request is about order {chosen[0]}; let me look it up.", [
            _call("get_order_status", {"order_id": chosen[0]})
        ]
    if last == ["get_order_status"] and any(_tools_called(m) == ["choose_order"] for m in steps):
        return _refund_looked_up(outputs[0])
    return None


def _refund_looked_up(output: str) -> tuple[str, list[dict]] | None:
    try:
        order = json.loads(output)
        amount = round(float(order["total"]), 2)
    except (ValueError, KeyError, TypeError):
        return None
    arguments = {"order_id": order["order_id"], "amount": amount, "reason": "Item arrived damaged"}
    said = f"Order {order['order_id']} ({order.get('items', '')}) arrived broken; I'll refund its total, ${amount:.2f}."
    return said, [_call("issue_refund", arguments)]
