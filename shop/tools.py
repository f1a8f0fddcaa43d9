"""The demo support shop's tools: their argument schemas and the code that runs them, describes
them and fetches their facts. shop/agents.py declares them (tier, columns, search) and registers them."""

import json
import unicodedata
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, TypedDict

from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, field_validator

from approvals.lib.text import money
from approvals.tools import ToolContext, ToolError

from .models import Customer, Order, OrderNote, OutgoingEmail, Refund

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

# Patterns are ASCII only: \d would also take other scripts' digits (A-١٠٠١), \w and \s other letters and spaces.
OrderId = Annotated[str, Field(pattern=r"^A-[0-9]{4}$", description="Order number, like A-1001.")]
EMAIL_ADDRESS = r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _order[O: Order](order_id: str, orders: QuerySet[O]) -> O:
    """The order with its customer, from `orders` (all orders, or an annotated queryset)."""
    order = orders.select_related("customer").filter(number=order_id).first()
    if order is None:
        raise ToolError(f"there is no order {order_id}")
    return order


def order_problem(order_id: str) -> str | None:
    if not Order.objects.filter(number=order_id).exists():
        return f"there is no order {order_id}."
    return None


# --- read-only -----------------------------------------------------------------------


class LookupCustomerArgs(Args):
    query: str = Field(min_length=2, max_length=200, description="A name or an email address.")


def lookup_customer(args: LookupCustomerArgs, ctx: ToolContext) -> str:
    customers = Customer.objects.filter(Q(email__iexact=args.query) | Q(name__icontains=args.query))[:5]
    found = [
        {
            "id": c.pk,
            "name": c.name,
            "email": c.email,
            "customer_since": c.customer_since.isoformat(),
            "orders": [o.number for o in c.orders.order_by("number")],
        }
        for c in customers
    ]
    return json.dumps({"customers": found})


class OrderArgs(Args):
    order_id: OrderId


class Refunded(TypedDict):
    refunded: Decimal | None  # the sum of the order's refunds (None: it has none)


def get_order_status(args: OrderArgs, ctx: ToolContext) -> str:
    """One statement: the order, its customer and the sum of its refunds (a subquery)."""
    refunds = Refund.objects.filter(order=OuterRef("pk")).values("order").annotate(s=Sum("amount")).values("s")
    order: WithAnnotations[Order, Refunded] = _order(args.order_id, Order.objects.annotate(refunded=Subquery(refunds)))
    return json.dumps(
        {
            "order_id": order.number,
            "customer": order.customer.name,
            "customer_email": order.customer.email,
            "status": order.status,
            "items": order.items,
            "total": str(order.total),
            "shipping": str(order.shipping),
            "refunded": str(order.refunded or Decimal("0.00")),
        }
    )


# --- reversible ----------------------------------------------------------------------


class AddOrderNoteArgs(Args):
    order_id: OrderId
    text: str = Field(min_length=1, max_length=2000)


def add_order_note(args: AddOrderNoteArgs, ctx: ToolContext) -> str:
    order = _order(args.order_id, Order.objects.all())
    note, _ = OrderNote.objects.get_or_create(
        idempotency_key=ctx.idempotency_key, defaults={"order": order, "text": args.text}
    )
    return f"Added note {note.pk} to order {order.number}."


def undo_order_note(idempotency_key: str) -> str:
    updated = OrderNote.objects.filter(idempotency_key=idempotency_key).update(removed=True)
    return "Note removed." if updated else "No note to remove."


# --- approval required ---------------------------------------------------------------


class IssueRefundArgs(Args):
    order_id: OrderId
    amount: float = Field(gt=0, le=100000, description="Amount in dollars, at most two decimals.")
    reason: str = Field(min_length=3, max_length=500)

    @field_validator("amount")
    @classmethod
    def cents(cls, value: float) -> float:
        if round(value, 2) != value:
            raise ValueError("Use at most two decimals.")
        return value


def refund_facts(args: IssueRefundArgs) -> dict:
    order = Order.objects.select_related("customer").filter(number=args.order_id).first()
    if order is None:
        return {"order": f"no order {args.order_id}"}
    since = timezone.now() - timedelta(days=30)
    recent = Refund.objects.filter(order__customer=order.customer, created_at__gte=since)
    recent_sum = recent.aggregate(s=Sum("amount"))["s"] or Decimal("0")
    already = order.refunded_total()
    facts = {
        "customer": order.customer.name,
        "customer_email": order.customer.email,
        "customer_since": order.customer.customer_since.isoformat(),
        "order_status": order.status,
        "order_total": money(order.total),
        "already_refunded": money(already),
        "refunds_to_customer_last_30_days": f"{recent.count()} totalling {money(recent_sum)}",
    }
    if Decimal(str(args.amount)) > order.total - already:
        facts["warning"] = f"The refund is more than the {money(order.total - already)} still refundable on this order."
    return facts


def describe_refund(args: IssueRefundArgs) -> str:
    order = Order.objects.select_related("customer").filter(number=args.order_id).first()
    if order is None:
        return f"Refund {money(args.amount)} for order {args.order_id} (no such order)"
    return (
        f"Refund {money(args.amount)} to {order.customer.name} for order {order.number}"
        f" (order total {money(order.total)})"
    )


def issue_refund(args: IssueRefundArgs, ctx: ToolContext) -> str:
    amount = Decimal(str(args.amount))
    with transaction.atomic():
        existing = Refund.objects.filter(idempotency_key=ctx.idempotency_key).first()
        if existing and ctx.retaken:  # this call's own refund, stored before its worker stopped
            return (
                f"Refunded {money(existing.amount)} on order {existing.order.number} (refund {existing.pk}; "
                "recorded by this same call before an interruption, so it was issued once)."
            )
        if existing:
            return (
                f"Refund {existing.pk} of {money(existing.amount)} on order {existing.order.number} was already issued."
            )
        order = Order.objects.select_for_update().get(pk=_order(args.order_id, Order.objects.all()).pk)
        remaining = order.total - order.refunded_total()
        if amount > remaining:
            raise ToolError(
                f"a refund of {money(amount)} exceeds the {money(remaining)} still refundable on {order.number}"
            )
        try:
            with transaction.atomic():
                refund = Refund.objects.create(
                    order=order, amount=amount, reason=args.reason, idempotency_key=ctx.idempotency_key
                )
        except IntegrityError:
            refund = Refund.objects.get(idempotency_key=ctx.idempotency_key)
    return f"Refunded {money(refund.amount)} on order {order.number} (refund {refund.pk})."


def simulate_refund(args: IssueRefundArgs) -> str:
    return (
        f"[dry run] Would record a refund of {money(args.amount)} on order {args.order_id}"
        f" for “{args.reason}”. Nothing was written."
    )


class SendEmailArgs(Args):
    to: str = Field(pattern=EMAIL_ADDRESS, max_length=254, description="Recipient email address.")
    subject: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=10000)
    order_id: OrderId | None = Field(default=None, description="The order this email is about, if any.")

    @field_validator("subject")
    @classmethod
    def one_line(cls, value: str) -> str:
        # A line break in a header would start another header (Bcc: ...); the mailer refuses it at sending.
        if any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in value):
            raise ValueError("The subject must be one line, without line breaks or control characters.")
        return value


def _address_warning(to: str, customer, order, closest) -> str:
    """Why the address looks wrong, with the right one in the same words; "" when it is the customer's."""
    if order is not None and order.customer != customer:
        return (
            f"{to} is not the address of {order.customer.name}, the customer of order {order.number}:"
            f" theirs is {order.customer.email}."
        )
    if customer is None:
        hint = f" The closest customer is {closest.name} <{closest.email}>." if closest else ""
        return f"{to} is not the address of any customer.{hint}"
    return ""


def email_facts(args: SendEmailArgs) -> dict:
    """Whose address this is; when it is not the right customer's, a warning that names the right address."""
    customer = Customer.objects.filter(email__iexact=args.to).first()
    order = Order.objects.select_related("customer").filter(number=args.order_id).first() if args.order_id else None
    closest = None if customer else Customer.objects.filter(email__istartswith=args.to.split("@")[0]).first()
    if customer is None:
        facts = {"recipient": "NOT the address of any customer"}
    else:
        facts = {"recipient": f"{customer.name}, a customer since {customer.customer_since.isoformat()}"}
    if warning := _address_warning(args.to, customer, order, closest):
        facts["warning"] = warning
    if order is not None:
        facts["order_customer_email"] = f"{order.customer.email} ({order.customer.name})"
    if closest:
        facts["closest_customer"] = f"{closest.name} <{closest.email}>"
    return facts


def describe_email(args: SendEmailArgs) -> str:
    about = f" about order {args.order_id}" if args.order_id else ""
    return f"Send an email to {args.to} with the subject “{args.subject}” ({len(args.body)} characters){about}"


def send_email(args: SendEmailArgs, ctx: ToolContext) -> str:
    with transaction.atomic():
        email, created = OutgoingEmail.objects.get_or_create(
            idempotency_key=ctx.idempotency_key, defaults={"to": args.to, "subject": args.subject, "body": args.body}
        )
        if created:
            send_mail(args.subject, args.body, None, [args.to])
    if created or ctx.retaken:  # retaken: this call's own email, stored before its worker stopped
        return f"Email {email.pk} sent to {email.to}."
    return f"Email {email.pk} was already sent."


def simulate_email(args: SendEmailArgs) -> str:
    return f"[dry run] Would send to {args.to}:\nSubject: {args.subject}\n\n{args.body}\n\nNothing was sent."


# --- forbidden -----------------------------------------------------------------------


class DeleteCustomerArgs(Args):
    customer_id: int


def delete_customer(args: DeleteCustomerArgs, ctx: ToolContext) -> str:
    raise ToolError("deleting customers is never allowed")
