"""Many pending calls at once, written straight to the table (the gate would take minutes for thousands)."""

from datetime import timedelta

from django.utils import timezone

from approvals.lib.hashing import args_hash
from approvals.models import Message, Run, ToolCall
from approvals.tools import registry
from shop.models import Customer


def pending_calls(
    count: int, *, requester=None, agent: str = "support", tool: str = "issue_refund", amount=None, real=False
):
    """`count` pending calls in one run: refunds of $1 to $600 unless `amount` says, emails for send_email.

    `real`: calls that can run as they are (the demo shop's orders and customers, the facts the tool fetches),
    so that an approval executes rather than going back to the queue because the facts changed."""
    run = Run.objects.create(agent=agent, request="Help the customers.", requested_by=requester, status="waiting")
    message = Message.objects.create(run=run, seq=Message.objects.filter(run=run).count(), role="assistant")
    now = timezone.now()
    rows = []
    for i in range(count):
        if tool == "send_email":
            to = _customer_emails()[i % 5] if real else f"c{i}@example.com"
            args = {"to": to, "subject": f"Order {i}", "body": "It has shipped."}
            text = f"Email {to}: “Order {i}”"
        else:
            value = amount if amount is not None else 1 + (i * 7) % 600
            args = {"order_id": f"A-{1000 + real + i % 5}", "amount": value, "reason": "Damaged"}
            text = f"Refund ${value:.2f} on order {args['order_id']}"
        facts = _facts(tool, args) if real else {"order_total": "$420.00"}
        rows.append(
            ToolCall(
                run=run, message=message, call_id=f"call_{run.pk}_{i}", tool_name=tool, arguments=args,
                arguments_hash=args_hash(args), tier="approval", status="pending", description=text,
                facts=facts, reasoning="The customer asked.", user_request=run.request,
                expires_at=now + timedelta(hours=1, minutes=i % 50), warn_at=now + timedelta(minutes=50),
            )
        )  # fmt: skip
    ToolCall.objects.bulk_create(rows, batch_size=1000)
    return run


def _customer_emails() -> list[str]:
    return list(Customer.objects.order_by("pk").values_list("email", flat=True))


def _facts(tool: str, args: dict) -> dict:
    declared = registry.get(tool)
    return declared.fetch_facts(declared.parse(args))
