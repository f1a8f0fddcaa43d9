"""The XSS test's payloads stored through the real paths, in every field a model or a customer controls."""

import json
import unicodedata
from dataclasses import dataclass, field

from agents import services as agent_services
from approvals import services
from approvals.models import AuditEvent, Decision, Message, Run, ToolCall
from approvals.services import ProposedCall
from shop.models import Customer, Order

from .payloads import Payload

# --- storing the payloads where models and customers write ----------------------------------------

RUNS = 8  # runs with calls; run r holds every RUNS-th payload, from the r-th
CALLS = (
    5  # calls of each run's second step: two wait, one comes back to the queue, one is edited and sent, one rejected
)
SHORT = 150  # payloads that fit a name, an address, a tool name, a call id or a subject


def _fit(payloads: list[Payload], limit: int) -> list[Payload]:
    """As many of the payloads as fit in `limit` characters, one per line."""
    taken, size = [], 0
    for payload in payloads:
        if size + len(payload.text) + 1 > limit:
            break
        taken.append(payload)
        size += len(payload.text) + 1
    return taken


def _groups(payloads: list[Payload], limit: int) -> list[list[Payload]]:
    """The payloads in groups that fit `limit` characters joined by spaces."""
    groups: list[list[Payload]] = [[]]
    for payload in payloads:
        if groups[-1] and len(" ".join(p.text for p in [*groups[-1], payload])) > limit:
            groups.append([])
        groups[-1].append(payload)
    return groups


def _lines(payloads: list[Payload]) -> str:
    return "\n".join(p.text for p in payloads)


def _one_line(payload: Payload) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in payload.text)


class Shorts:
    """The short payloads of a chunk, handed out in turn."""

    def __init__(self, payloads: list[Payload]):
        self.payloads = [p for p in payloads if len(p.text) <= SHORT]
        self.at = 0

    def next(self, fits=lambda p: True) -> Payload:
        while True:
            payload = self.payloads[self.at % len(self.payloads)]
            self.at += 1
            if fits(payload):
                return payload

    def several(self, limit: int, first=lambda p: True) -> list[Payload]:
        """Payloads that fit `limit` characters joined by spaces, the first one chosen by `first`."""
        taken = [self.next(first)]
        while len(" ".join(p.text for p in taken)) + 1 + len(self.payloads[self.at % len(self.payloads)].text) <= limit:
            taken.append(self.next())
        return taken


@dataclass
class Stored:
    runs: list[Run] = field(default_factory=list)  # with calls, then the failed one
    shown: dict[int, list[Payload]] = field(default_factory=dict)  # run -> payloads its page shows verbatim
    calls: dict[str, ToolCall] = field(default_factory=dict)  # one of each kind, to open
    customers: list[Payload] = field(default_factory=list)  # whose names are payloads


def store_payloads(payloads: list[Payload], requester, reviewer) -> Stored:
    """Every payload, in every field a model or a customer controls, through the services the agent loop uses."""
    stored = Stored()
    for r in range(RUNS):
        chunk = payloads[r::RUNS]
        shorts = Shorts(chunk)
        orders = []
        for k in range(CALLS):
            i = r * CALLS + k
            name = shorts.several(200, first=lambda p: p.family == "bidi")
            stored.customers += name
            customer = Customer.objects.create(
                name=" ".join(p.text for p in name),
                email=" ".join(p.text for p in shorts.several(240)) + f"@c{i}.test",
                customer_since="2022-01-04",
            )
            orders.append(
                Order.objects.create(
                    number=f"A-{2000 + i}",
                    customer=customer,
                    total="100.00",
                    status=Order.Status.DELIVERED,
                    items=_lines(chunk[k::CALLS]),
                )
            )
        run = agent_services.run_start(agent_name="support", request=_lines(chunk), requested_by=requester)
        stored.runs.append(run)
        stored.shown[run.pk] = chunk

        # A first step that needs nobody: lookups and a note run at once, made-up tools are refused.
        first = [
            ProposedCall(f"status-{r}", "get_order_status", json.dumps({"order_id": orders[0].number})),
            ProposedCall(f"find-{r}", "lookup_customer", json.dumps({"query": orders[1].customer.email})),
            ProposedCall(
                f"note-{r}",
                "add_order_note",
                json.dumps({"order_id": orders[0].number, "text": _lines(_fit(chunk[1::2], 2000))}),
            ),
        ]
        # Every payload of the chunk in a made-up tool's name, its call id and its arguments, a few to a call.
        for names in _groups(chunk, 200):
            text = " ".join(p.text for p in names)
            first.append(ProposedCall(text, text, text))
        bad = {"order_id": shorts.next().text, "amount": shorts.next().text, "reason": shorts.next().text}
        first.append(ProposedCall("bad:" + shorts.next().text, "issue_refund", json.dumps(bad)))
        services.step_record(run=run, content=_lines(chunk[::3]), calls=first)
        for call in run.tool_calls.filter(status=ToolCall.Status.APPROVED):
            services.toolcall_execute(call=call)

        # The second step: refunds and emails for a person, the model's arguments laden with payloads.
        second = []
        for k, order in enumerate(orders):
            if k % 2 == 0:
                arguments = {"order_id": order.number, "amount": 490.0 if k == 0 else 35.0}
                arguments["reason"] = _lines(_fit(chunk[k::2], 500))
                tool = "issue_refund"
            else:
                arguments = {"to": f"customer{r}{k}@example.org", "order_id": order.number}
                arguments["subject"] = shorts.next(_one_line).text
                arguments["body"] = _lines(_fit(chunk, 10000))
                tool = "send_email"
            second.append(ProposedCall(f"{k}:{shorts.next().text}", tool, json.dumps(arguments)))
        services.step_record(run=run, content=_lines(chunk), calls=second)
        pending = list(run.tool_calls.filter(status=ToolCall.Status.PENDING).order_by("pk"))
        waiting_refund, waiting_email, returning, edited, rejected = pending

        # A reviewer rejects one with a reason and guidance...
        services.toolcall_respond(
            call_id=rejected.pk,
            reviewer=reviewer,
            shown_hash=rejected.review_hash,
            reason=_lines(chunk[1::4]),
            guidance=_lines(chunk[3::4]),
        )
        # ...edits an email and it is sent...
        changed = {**edited.arguments, "subject": shorts.next(_one_line).text, "body": _lines(_fit(chunk[::-1], 10000))}
        services.toolcall_decide(
            call_id=edited.pk,
            reviewer=reviewer,
            verdict=Decision.Verdict.EDIT,
            shown_hash=edited.review_hash,
            arguments=changed,
            approve_anyway=True,
        )
        services.toolcall_execute(call=ToolCall.objects.get(pk=edited.pk))
        # ...and approves a refund whose customer then changes their address: it comes back to the queue.
        services.toolcall_decide(
            call_id=returning.pk, reviewer=reviewer, verdict=Decision.Verdict.APPROVE, shown_hash=returning.review_hash
        )
        Customer.objects.filter(orders__number=returning.arguments["order_id"]).update(
            email=" ".join(p.text for p in shorts.several(240)) + f"@moved{r}.test"
        )
        services.toolcall_execute(call=ToolCall.objects.get(pk=returning.pk))
        if r == 0:
            stored.calls |= {
                "waiting refund": waiting_refund,
                "waiting email": waiting_email,
                "returned refund": returning,
                "edited email": edited,
                "rejected refund": rejected,
                "order lookup": run.tool_calls.get(call_id=f"status-{r}"),
                "made-up tool": run.tool_calls.filter(status=ToolCall.Status.INVALID).first(),
            }

    # A run the model failed: its error quotes everything.
    failed = agent_services.run_start(agent_name="support", request=payloads[0].text, requested_by=requester)
    services.run_fail(run=failed, error="The model answered with an error:\n" + _lines(payloads))
    stored.runs.append(failed)
    stored.shown[failed.pk] = payloads
    return stored


def coverage(payloads: list[Payload]) -> dict[str, set[int]]:
    """Field -> the payloads stored in it, read back from the database."""
    from shop.models import OrderNote, OutgoingEmail

    def values(rows):
        for value in rows:
            yield json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value or "")

    calls = ToolCall.objects.all()
    fields = {
        "customer name": Customer.objects.values_list("name", flat=True),
        "customer email": Customer.objects.values_list("email", flat=True),
        "order items": Order.objects.values_list("items", flat=True),
        "run request": Run.objects.values_list("request", flat=True),
        "run error": Run.objects.values_list("last_error", flat=True),
        "assistant's reasoning": Message.objects.filter(role="assistant").values_list("content", flat=True),
        "tool name": calls.values_list("tool_name", flat=True),
        "call id": calls.values_list("call_id", flat=True),
        "raw arguments": calls.values_list("raw_arguments", flat=True),
        "arguments": calls.values_list("arguments", flat=True),
        "edited arguments": calls.filter(approved_arguments__isnull=False).values_list("approved_arguments", flat=True),
        "description": calls.values_list("description", flat=True),
        "facts": calls.values_list("facts", flat=True),
        "tool output": calls.values_list("output", flat=True),
        "back-in-queue reason": calls.values_list("returned_reason", flat=True),
        "decision reason": Decision.objects.values_list("reason", flat=True),
        "decision guidance": Decision.objects.values_list("guidance", flat=True),
        "order note": OrderNote.objects.values_list("text", flat=True),
        "email sent": OutgoingEmail.objects.values_list("body", flat=True),
        "audit trail": AuditEvent.objects.values_list("payload", flat=True),
    }
    result = {}
    for name, rows in fields.items():
        text = "\0".join(values(rows))
        result[name] = {p.n for p in payloads if p.text in text or json.dumps(p.text, ensure_ascii=False)[1:-1] in text}
    return result
