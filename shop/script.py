"""The demo shop's scripted model: what its agents "say" and which tools they call, for the
scripted model server (agents/model_server.py), so the demo and the tests need no real model.

Like a real model it may call a tool its agent does not have (a refund asked of the orders
agent, a made-up cancel_order): the gate answers that there is no such tool.
"""

import json
import re

from .script_orders import follow_choice, plan_without_order

ORDER = re.compile(r"\bA-\d{4}\b")
AMOUNT = re.compile(r"\$(\d+(?:\.\d{1,2})?)")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")

# The demo shop's customers, by first name, as the scripted agent "remembers" them, with an order of theirs.
KNOWN = {
    "dana": ("Dana Smith", "dana.smith@gmail.co", "A-1001"),  # not Dana's real address: a reviewer should catch it
    "lee": ("Lee Wong", "lee.wong@example.com", "A-1002"),
    "maria": ("Maria Garcia", "maria.garcia@example.com", "A-1003"),
}


def _call(name: str, arguments: dict) -> dict:
    return {"name": name, "arguments": arguments}


def plan(instruction: str, default_order: str = "A-1001") -> tuple[str, list[dict]]:
    """What the agent says and which tools it calls for a user instruction.

    An instruction that names no order (a reviewer's guidance, say) is about the
    order of the conversation so far, default_order.
    """
    text = instruction.lower()
    orders = ORDER.findall(instruction)
    order = orders[0] if orders else default_order
    if "delete" in text and "customer" in text:
        return "The customer wants their account removed; I'll delete the customer record.", [
            _call("delete_customer", {"customer_id": 1})
        ]
    if "cancel" in text:
        return f"I'll cancel order {order} for the customer.", [_call("cancel_order", {"order_id": order})]
    if asked := plan_without_order(instruction):
        return asked
    if "email" in text:
        return _plan_email(instruction, orders)
    if "refund" in text:
        return _plan_refund(instruction, order)
    if orders:
        return f"Let me look up order {order}.", [_call("get_order_status", {"order_id": order})]
    query = EMAIL.findall(instruction) or [w for w in instruction.split() if w.istitle()][-1:] or [instruction[:40]]
    return "Let me look up the customer.", [_call("lookup_customer", {"query": query[0].strip(".,")})]


def _plan_email(instruction: str, orders: list[str]) -> tuple[str, list[dict]]:
    text = instruction.lower()
    name = next((k for k in KNOWN if k in text), "dana")
    full, address, their_order = KNOWN[name]
    explicit = EMAIL.findall(instruction)
    shipped = "Your replacement has shipped and should arrive in 2-3 days."
    body = f"Hi {full.split()[0]},\n\n{shipped}\n\nBest,\nThe support team"
    arguments = {
        "to": explicit[0] if explicit else address,
        "order_id": orders[0] if orders else their_order,
        "subject": "An update on your order",
        "body": body,
    }
    return f"I'll email {full} to let them know.", [_call("send_email", arguments)]


def _plan_refund(instruction: str, order: str) -> tuple[str, list[dict]]:
    text = instruction.lower()
    amounts = [float(a) for a in AMOUNT.findall(instruction)]
    amount = amounts[0] if amounts else 10.0
    refund = _call("issue_refund", {"order_id": order, "amount": amount, "reason": "Item arrived damaged"})
    if any(word in text for word in ("check", "status", "look up")):
        lookup = _call("get_order_status", {"order_id": order})
        return f"I'll check order {order} and refund ${amount:.2f} at the same time.", [lookup, refund]
    return f"The customer reports a problem with order {order}; I'll refund ${amount:.2f}.", [refund]


def follow_up(messages: list[dict]) -> tuple[str, list[dict]]:
    """After tool outputs: retry with a real tool where one was made up, else summarise."""
    outputs = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        outputs.append(message.get("content") or "")
    outputs.reverse()
    if any("no tool named 'cancel_order'" in o for o in outputs):
        request = next(m["content"] for m in messages if m.get("role") == "user")
        order = (ORDER.findall(request) or ["A-1001"])[0]
        return "I can't cancel orders myself; I'll leave a note for the team instead.", [
            _call("add_order_note", {"order_id": order, "text": "Customer asked to cancel this order."})
        ]
    if chosen := follow_choice(messages, outputs):
        return chosen
    return "Here is what happened:\n" + "\n".join(f"- {o}" for o in outputs), []


GUIDANCE = re.compile(r"^Guidance from reviewer [^:]*: ", re.MULTILINE)


def revise(messages: list[dict]) -> tuple[str, list[dict]] | None:
    """After a reviewer sent the draft reply back: a new draft that heeds their guidance (None otherwise)."""
    step: dict = next((m for m in reversed(messages) if m.get("role") == "assistant"), {})
    held = [c for c in step.get("tool_calls") or [] if c["function"]["name"] == "reply_to_customer"]
    if not held:
        return None
    draft = json.loads(held[0]["function"].get("arguments") or "{}").get("draft", "")
    last = messages[-1]
    said = GUIDANCE.sub("", last.get("content") or "") if last.get("role") == "user" else ""
    return f"{draft}\n\n{said.strip() or 'Sorry for any trouble this caused.'}", []


def respond(request: dict) -> tuple[str, list[dict]]:
    """Plan from the latest user message (the request, or a reviewer's guidance after tool outputs);
    a draft reply sent back is written again, heeding the guidance."""
    messages = request.get("messages") or []
    revised = revise(messages)
    if revised is not None:
        return revised
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        return follow_up(messages)
    mentioned = [o for m in messages if m.get("role") == "user" for o in ORDER.findall(m.get("content") or "")]
    return plan(last.get("content") or "", mentioned[0] if mentioned else "A-1001")
