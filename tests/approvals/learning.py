"""Seeded history for the learned-rule tests: calls proposed today, settled as people settled them."""

from itertools import count

from approvals.models import Decision, Message, Run, ToolCall

_ids = count()
STATUS_OF = {"approve": "executed", "edit": "executed", "reject": "rejected", "expire": "expired", None: "pending"}
EMAIL = {"to": "dana.smith@example.com", "subject": "Your order", "body": "It has shipped."}


def refund(amount, verdict, reviewer, *, agent="support", run=None, tool="issue_refund", status=None) -> ToolCall:
    """A refund (or, with tool="send_email", an email) proposed today and settled by this verdict (None: still
    waiting): one Decision row, the expiry's without a reviewer."""
    run = run or Run.objects.create(agent=agent, request="Help.")
    message = Message.objects.create(run=run, seq=next(_ids), role="assistant")
    arguments = {"order_id": "A-1001", "amount": amount, "reason": "Item arrived damaged"}
    call = ToolCall.objects.create(
        run=run,
        message=message,
        call_id=f"c{next(_ids)}",
        tool_name=tool,
        arguments=EMAIL if tool == "send_email" else arguments,
        status=status or STATUS_OF[verdict],
        policy={"action": "review"},
    )
    if verdict:
        Decision.objects.create(tool_call=call, reviewer=None if verdict == "expire" else reviewer, verdict=verdict)
    return call


def seed_history(reviewer) -> ToolCall:
    """25 refunds of $21 to $45 from the support agent, approved as proposed (refunds of at most $20 run
    without review: the rule the agents app's migration adds); larger ones edited, rejected, approved; and one
    refund of $30 still waiting, which is returned."""
    for amount in range(21, 46):
        refund(float(amount), "approve", reviewer)
    refund(60.0, "edit", reviewer)
    refund(80.0, "reject", reviewer)
    refund(100.0, "approve", reviewer)
    return refund(30.0, None, reviewer)
