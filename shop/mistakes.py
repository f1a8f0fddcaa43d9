"""The mistakes the shop's tools declare for practice calls (practice/): each a realistic one that the
call's facts, fetched for real, let a careful reviewer see."""

from decimal import Decimal

from practice.mistakes import Mistake, Planted

from .models import Customer, Order
from .tools import money

MAX_REFUND = 100000  # IssueRefundArgs.amount's bound


def _order(arguments: dict) -> Order | None:
    return Order.objects.select_related("customer").filter(number=arguments.get("order_id")).first()


def amount_above_refundable(arguments: dict) -> Planted | None:
    order = _order(arguments)
    if order is None or order.total <= 0:
        return None
    amount = min(order.total * 10, Decimal(MAX_REFUND))
    explanation = f"the refund ({money(amount)}) was ten times the order total ({money(order.total)})"
    return Planted(arguments | {"amount": float(amount)}, explanation)


def other_customers_order(arguments: dict) -> Planted | None:
    order = _order(arguments)
    if order is None:
        return None
    other = Order.objects.select_related("customer").exclude(customer=order.customer).order_by("number").first()
    if other is None:
        return None
    amount = min(Decimal(str(arguments.get("amount", 0))), other.total - other.refunded_total())
    if amount <= 0:
        return None
    explanation = (
        f"the refund was for order {other.number} of {other.customer.name}, not the customer's order {order.number}"
    )
    return Planted(arguments | {"order_id": other.number, "amount": float(amount)}, explanation)


def refund_already_made(arguments: dict) -> Planted | None:
    order = _order(arguments)
    if order is None or order.refunded_total() <= 0:
        return None
    already = order.refunded_total()
    explanation = f"order {order.number} was already refunded {money(already)}: this refunded it again"
    return Planted(arguments | {"amount": float(max(already, order.total))}, explanation)


def recipient_not_customer(arguments: dict) -> Planted | None:
    to = str(arguments.get("to", ""))
    other = Customer.objects.exclude(email__iexact=to).order_by("email").first()
    if other is None:
        return None
    explanation = f"the email went to {other.email} ({other.name}), who is not the customer it was meant for ({to})"
    return Planted(arguments | {"to": other.email}, explanation)


REFUND_MISTAKES = (
    Mistake("amount_above_refundable", "An amount above what is refundable", "amount", amount_above_refundable),
    Mistake("other_customers_order", "Another customer's order", "order_id", other_customers_order),
    Mistake("refund_already_made", "A refund already made", "amount", refund_already_made),
)
EMAIL_MISTAKES = (
    Mistake("recipient_not_customer", "A recipient who is not the customer", "to", recipient_not_customer),
)
