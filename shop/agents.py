"""The demo shop's tools and agents, registered the way any app registers its own (from ShopConfig.ready()).

Each tool: its schema and code (shop/tools.py), its tier, the columns a reviewer tells its calls apart
by, and what an auditor can find them by. Two agents use them: "support" (all of them) and "orders"
(the read-only ones), side by side.
"""

from agents import model_server
from agents.agents import Agent
from agents.agents import registry as agents
from approvals.models import Tier
from approvals.tools import Searchable, Tool
from approvals.tools import registry as tools

from . import choose_order as c
from . import mistakes, replies, script
from . import tools as t

ORDER_NUMBER = Searchable("order_id", pattern=r"[A-Za-z]-[0-9]+", forms=("upper",), label="an order number (A-1001)")
EMAIL = r"[^@\s]+@[^@\s]+"
CUSTOMER_EMAIL = Searchable("customer_email", "facts", EMAIL, ("lower",), "a customer's email")
RECIPIENT = Searchable("to", pattern=EMAIL, forms=("lower", "as typed"), label="a recipient's email")
CUSTOMER_NAME = Searchable("customer", "facts", label="a customer's name")

TOOLS: list[Tool] = [
    Tool(
        name="lookup_customer",
        description="Find customers by name or email address.",
        args_model=t.LookupCustomerArgs,
        tier=Tier.READ_ONLY,
        func=t.lookup_customer,
        describe=lambda a: f"Look up customers matching “{a.query}”",
    ),
    Tool(
        name="get_order_status",
        description="Get an order's status, items, total and what was refunded.",
        args_model=t.OrderArgs,
        tier=Tier.READ_ONLY,
        func=t.get_order_status,
        describe=lambda a: f"Look up order {a.order_id}",  # no draft check: the lookup itself says "no order"
        search_fields=(ORDER_NUMBER,),
    ),
    Tool(
        name="choose_order",
        description="Find which of a customer's orders a request is about, by their email; asks a person "
        "when the customer has several.",
        args_model=c.ChooseOrderArgs,
        tier=Tier.READ_ONLY,
        func=c.choose_order,
        describe=c.describe_choice,
        answered=c.chosen_order,
        key_fields=("email",),
    ),
    Tool(
        name="add_order_note",
        description="Add an internal note to an order (can be undone).",
        args_model=t.AddOrderNoteArgs,
        tier=Tier.REVERSIBLE,
        func=t.add_order_note,
        describe=lambda a: f"Add a note to order {a.order_id}: “{a.text}”",
        check=lambda a: t.order_problem(a.order_id),
        undo=t.undo_order_note,
        key_fields=("order_id",),
        search_fields=(ORDER_NUMBER,),
    ),
    Tool(
        name="issue_refund",
        description="Refund money to the customer of an order. A person reviews refunds.",
        args_model=t.IssueRefundArgs,
        tier=Tier.APPROVAL,
        func=t.issue_refund,
        describe=t.describe_refund,
        facts=t.refund_facts,
        check=lambda a: t.order_problem(a.order_id),
        simulate=t.simulate_refund,
        material_facts=("already_refunded", "order_status", "customer_email"),
        idempotent=True,  # a second run with the same key finds the refund and issues nothing
        key_fields=("amount", "order_id"),
        money_fields=("amount",),
        key_facts=("customer",),
        search_fields=(ORDER_NUMBER, CUSTOMER_EMAIL, CUSTOMER_NAME),
        mistakes=mistakes.REFUND_MISTAKES,  # for practice calls (practice/)
    ),
    Tool(
        name="send_email",
        description="Send an email to a customer. A person reviews every email.",
        args_model=t.SendEmailArgs,
        tier=Tier.APPROVAL,
        func=t.send_email,
        describe=t.describe_email,
        facts=t.email_facts,
        check=lambda a: t.order_problem(a.order_id) if a.order_id else None,
        simulate=t.simulate_email,
        material_facts=("recipient", "order_customer_email"),
        key_fields=("to", "subject"),
        search_fields=(ORDER_NUMBER, RECIPIENT),
        mistakes=mistakes.EMAIL_MISTAKES,
    ),
    Tool(
        name="delete_customer",
        description="Delete a customer and their data.",
        args_model=t.DeleteCustomerArgs,
        tier=Tier.FORBIDDEN,
        func=t.delete_customer,
    ),
]

SUPPORT = Agent(
    name="support",
    title="Support agent (demo shop)",
    system_prompt=(
        "You are a customer support agent for a small online shop. Use the tools to look up customers and "
        "orders, add notes, issue refunds and email customers. Refunds and emails are reviewed by a person; "
        "if a reviewer rejects or changes a call, follow their decision and do not retry the original."
    ),
    tools=tuple(tool.name for tool in TOOLS),
    examples=(
        "Order A-1001 arrived broken. Please refund $490.",
        "Email Dana that her replacement has shipped.",
        "Check the status of order A-1002 and refund $35 for the missing item.",
        "Cancel order A-1004.",
        "I'm dana.smith@example.com, my item arrived broken, please refund it.",
        "The customer of order A-1005 threatens a chargeback. Check the order.",
    ),
    # Its final answer is held as a draft a person approves, edits or sends back (shop/replies.py).
    checkpoints=(replies.CHECKPOINT_REPLY,),
)

ORDERS = Agent(
    name="orders",
    title="Order lookup agent (demo shop, read-only)",
    system_prompt=(
        "You answer questions about a small online shop's orders and customers. You can only look things up: "
        "you cannot refund, note or email; say so when asked to."
    ),
    tools=("lookup_customer", "get_order_status"),
    examples=("Check the status of order A-1003.", "Refund $5 on order A-1003."),
)


def register() -> None:
    for tool in TOOLS + [replies.TOOL]:
        tools.register(tool)
    agents.register(SUPPORT)
    agents.register(ORDERS)
    model_server.register_script(script.respond)
