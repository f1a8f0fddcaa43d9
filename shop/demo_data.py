"""Believable demo data for the support shop, and the demo accounts."""

from datetime import date, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from approvals import roles
from approvals.models import PolicyRule, ToolSetting, TurnRule
from practice.models import PracticeSetting

from .models import Customer, Order

CUSTOMERS = [
    ("Dana Smith", "dana.smith@example.com", date(2021, 3, 14)),
    ("Lee Wong", "lee.wong@example.com", date(2023, 11, 2)),
    ("Maria Garcia", "maria.garcia@example.com", date(2019, 6, 30)),
    ("Sam Okafor", "sam.okafor@example.com", date(2025, 1, 9)),
]

ORDERS = [
    ("A-1001", "dana.smith@example.com", "49.00", "7.50", Order.Status.DELIVERED, "Ceramic teapot (1)"),
    ("A-1002", "lee.wong@example.com", "129.90", "9.90", Order.Status.DELIVERED, "Hiking boots (1), wool socks (2)"),
    ("A-1003", "maria.garcia@example.com", "62.50", "7.50", Order.Status.SHIPPED, "Cookbook (1), apron (1)"),
    ("A-1004", "sam.okafor@example.com", "815.00", "0.00", Order.Status.PROCESSING, "Espresso machine (1)"),
    ("A-1005", "dana.smith@example.com", "23.00", "4.00", Order.Status.DELIVERED, "Tea sampler (1)"),
]

DEMO_PASSWORD = "review-demo-2026"


def seed_shop() -> None:
    for name, email, since in CUSTOMERS:
        Customer.objects.get_or_create(email=email, defaults={"name": name, "customer_since": since})
    for i, (number, email, total, shipping, status, items) in enumerate(ORDERS):
        Order.objects.get_or_create(
            number=number,
            defaults={
                "customer": Customer.objects.get(email=email),
                "total": Decimal(total),
                "shipping": Decimal(shipping),
                "status": status,
                "items": items,
                "placed_at": timezone.now() - timedelta(days=12 - i),
            },
        )


def setup_roles() -> None:
    roles.roles_setup()
    Group.objects.get_or_create(name="senior")


def seed_users() -> dict:
    """A reviewer to log in as, an auditor, and a requester whose runs the reviewer decides."""
    User = get_user_model()
    setup_roles()
    reviewer, created = User.objects.get_or_create(username="reviewer", defaults={"is_staff": True})
    if created:
        reviewer.set_password(DEMO_PASSWORD)
        reviewer.save()
    reviewer.groups.add(Group.objects.get(name="reviewers"), Group.objects.get(name="senior"))
    auditor, created = User.objects.get_or_create(username="auditor", defaults={"is_staff": True})
    if created:
        auditor.set_password(DEMO_PASSWORD)
        auditor.save()
    auditor.groups.add(Group.objects.get(name="auditors"))
    requester, created = User.objects.get_or_create(username="ops-agent")
    if created:
        requester.set_unusable_password()
        requester.save()
    return {"reviewer": reviewer, "auditor": auditor, "requester": requester}


def seed_governance() -> None:
    """Who decides what, and how long calls may wait: large refunds only by "senior", behind the high-impact
    gate (approvals/policy/friction.py);
    refunds and emails wait at most an hour, then an overdue refund goes to "senior" once."""
    setup_roles()
    senior = Group.objects.get(name="senior")
    PolicyRule.objects.get_or_create(
        name="Refunds over $500: senior reviewers only",
        defaults={
            "tool_name": "issue_refund",
            "field": "amount",
            "operator": PolicyRule.Operator.GT,
            "value": 500,
            "outcome": PolicyRule.Outcome.REVIEW,
            "group": senior,
            "order": 5,
            "high_impact": True,  # the card's Approve waits 10 s and asks for the amount typed
        },
    )
    PolicyRule.objects.get_or_create(
        name="Refunds of at most $50 run without review (trial)",
        defaults={
            "tool_name": "issue_refund",
            "field": "amount",
            "operator": PolicyRule.Operator.LE,
            "value": 50,
            "outcome": PolicyRule.Outcome.RUN,
            "shadow": True,
            "order": 20,
        },
    )
    seed_tool_settings(senior)
    seed_turn_rules()


def seed_tool_settings(senior: Group) -> None:
    """Refunds and emails wait at most an hour; an overdue refund goes to `senior` once; a refund a rule marks
    high impact is approved with its amount typed."""
    ToolSetting.objects.get_or_create(
        tool_name="issue_refund",
        defaults={
            "timeout_minutes": 60,
            "on_expiry": ToolSetting.OnExpiry.ESCALATE,
            "escalate_to": senior,
            "confirm_field": "amount",
        },
    )
    ToolSetting.objects.get_or_create(tool_name="send_email", defaults={"timeout_minutes": 60})


def seed_practice() -> None:
    """Practice calls at a rate a newcomer sees: one refund in two and one email in two gets a practice copy
    with a planted mistake (practice/), so one of the first few calls to decide is a practice call."""
    for tool_name in ("issue_refund", "send_email"):
        PracticeSetting.objects.get_or_create(tool_name=tool_name, group=None, defaults={"rate": 2})


def seed_turn_rules() -> None:
    """Model turns a person reads first: any turn of a conversation that mentions a chargeback or a lawyer;
    and, in shadow mode, every turn of a refund conversation (the admin shows how many it would have paused)."""
    TurnRule.objects.get_or_create(
        name="Chargebacks and legal threats: a person reads the turn first",
        defaults={"words": "chargeback\nlawyer\nlegal action", "order": 10},
    )
    TurnRule.objects.get_or_create(
        name="Every turn of a refund conversation (trial)",
        defaults={"words": "refund", "shadow": True, "order": 20},
    )


DEMO_REQUESTS = [
    "Order A-1001 arrived broken. Please refund $490.",
    "Email Dana that her replacement has shipped.",
    "Check the status of order A-1002 and refund $35 for the missing item.",
    "Cancel order A-1004, the customer changed their mind.",
]
