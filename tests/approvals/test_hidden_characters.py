"""Invisible and bidirectional characters from a model or a customer are shown as such on every page
(U+202E turns the text after it around, U+200B is not seen at all): never raw in the text a person reads."""

import json
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from agents import services as agent_services
from approvals import services
from approvals.models import AuditEvent, Decision, Message, ToolCall
from approvals.services import ProposedCall

pytestmark = pytest.mark.django_db

HIDDEN = "\u202e\u200b"
SHOWN_ATTRIBUTES = ("title", "aria-label", "alt", "placeholder")


class ShownText(HTMLParser):
    """The text nodes of a page and the attributes people read, except what a form field holds for editing."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.pieces += [value or "" for name, value in attrs if name in SHOWN_ATTRIBUTES]
        if tag in ("script", "style", "textarea"):
            self.skipping.append(tag)

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping:
            self.pieces.append(data)


def raw_hidden(html: str) -> list[str]:
    parser = ShownText()
    parser.feed(html)
    return [piece.strip() for piece in parser.pieces if any(ch in piece for ch in HIDDEN)]


@pytest.fixture
def record(shop, requester, reviewer):
    """A run whose request, reasoning, email subject (so description and arguments) and a made-up
    tool name hold hidden characters; one email pending, one rejected with such a reason."""
    run = agent_services.run_start(agent_name="support", request=f"Email Dana{HIDDEN} please", requested_by=requester)
    email = {"to": "dana.smith@example.com", "subject": f"Your order{HIDDEN} A-1001", "body": f"Hello{HIDDEN}"}
    services.step_record(
        run=run,
        content=f"I will write{HIDDEN} to Dana.",
        calls=[
            ProposedCall("call_1", "send_email", json.dumps(email)),
            ProposedCall("call_2", "send_email", json.dumps({**email, "body": f"Again{HIDDEN}"})),
            ProposedCall(f"call{HIDDEN}3", f"refund{HIDDEN}", json.dumps({"note": f"x{HIDDEN}"})),
        ],
    )
    pending, rejected, made_up = run.tool_calls.order_by("pk")
    services.toolcall_decide(
        call_id=rejected.pk, reviewer=reviewer, verdict="reject", shown_hash=rejected.review_hash, reason=f"No{HIDDEN}"
    )
    assert HIDDEN in pending.description and HIDDEN in made_up.tool_name
    return {"run": run, "calls": [pending, rejected, made_up]}


def pages(record) -> list[str]:
    run, calls = record["run"], record["calls"]
    decision = Decision.objects.get(tool_call=calls[1])
    message = Message.objects.filter(run=run, role="assistant").get()
    events = AuditEvent.objects.filter(run=run).values_list("pk", flat=True)
    return [
        reverse("agents:runs"),
        reverse("approvals:run", args=[run.pk]),
        reverse("approvals:insight"),
        *[reverse("approvals:call", args=[call.pk]) for call in calls],
        reverse("admin:approvals_run_changelist"),
        reverse("admin:approvals_run_change", args=[run.pk]),
        reverse("admin:approvals_toolcall_changelist"),
        *[reverse("admin:approvals_toolcall_change", args=[call.pk]) for call in calls],
        reverse("admin:approvals_decision_changelist"),
        reverse("admin:approvals_decision_change", args=[decision.pk]),
        reverse("admin:approvals_message_changelist"),
        reverse("admin:approvals_message_change", args=[message.pk]),
        reverse("admin:approvals_auditevent_changelist"),
        *[reverse("admin:approvals_auditevent_change", args=[pk]) for pk in events],
        reverse("admin:approvals_shadowresult_changelist"),
    ]


def test_the_queue_shows_hidden_characters_as_such(client, reviewer, record):
    client.force_login(reviewer)
    response = client.get(reverse("approvals:queue"))
    assert response.status_code == 200
    assert "[U+202E]" in response.text
    assert raw_hidden(response.text) == []


def test_no_page_shows_a_hidden_character_raw(admin_client, record):
    shown = {}
    for url in pages(record):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        shown[url] = raw_hidden(response.text)
    assert {url: found for url, found in shown.items() if found} == {}


def test_the_pages_name_each_hidden_character(admin_client, record):
    run, calls = record["run"], record["calls"]
    for url in [
        reverse("agents:runs"),
        reverse("approvals:run", args=[run.pk]),
        reverse("admin:approvals_toolcall_changelist"),
        reverse("admin:approvals_toolcall_change", args=[calls[0].pk]),
    ]:
        text = admin_client.get(url).text
        assert "[U+202E]" in text and "[U+200B]" in text, url


def test_an_escaped_tool_name_stays_escaped_where_it_is_shown_as_plain_text(admin_client, record):
    made_up = record["calls"][2]
    ToolCall.objects.filter(pk=made_up.pk).update(tool_name=f"<b>bold</b>{HIDDEN}")
    text = admin_client.get(reverse("approvals:call", args=[made_up.pk])).text
    assert "<b>bold</b>" not in text
    title = text.split("<title>")[1].split("</title>")[0]
    assert f"&lt;b&gt;bold&lt;/b&gt;[U+202E][U+200B] #{made_up.pk}" in title


def test_the_shops_admin_shows_what_customers_and_the_model_wrote_with_hidden_characters_as_such(admin_client, shop):
    from shop.models import Customer, Order, OrderNote, OutgoingEmail

    customer = Customer.objects.create(name=f"Eve{HIDDEN}", email="eve@example.com", customer_since="2024-01-01")
    order = Order.objects.create(number="A-2001", customer=customer, total=10, status="delivered", items="Mug (1)")
    OrderNote.objects.create(order=order, text=f"Note{HIDDEN}", idempotency_key="note-1")
    OutgoingEmail.objects.create(to="eve@example.com", subject=f"Hi{HIDDEN}", body="Hello", idempotency_key="mail-1")
    for name in ("customer", "order", "ordernote", "outgoingemail"):
        response = admin_client.get(reverse(f"admin:shop_{name}_changelist"))
        assert response.status_code == 200
        assert "[U+202E]" in response.text, name
        assert raw_hidden(response.text) == [], name


def test_the_approve_anyway_button_names_the_hidden_characters_of_the_warning_it_quotes(client, reviewer, run):
    from shop.models import Customer
    from tests.reviewing import propose

    Customer.objects.filter(email="dana.smith@example.com").update(name=f"Dana{HIDDEN}")
    email = {"to": "someone@example.org", "subject": "Hi", "body": "Hello", "order_id": "A-1001"}
    call = propose(run, "send_email", email)
    client.force_login(reviewer)
    text = client.get(reverse("approvals:call", args=[call.pk])).text
    assert 'title="The facts warn: someone@example.org is not the address of Dana[U+202E][U+200B],' in text
    assert raw_hidden(text) == []


def test_the_message_after_a_decision_without_javascript_shows_hidden_characters_as_such(client, reviewer, record):
    pending = record["calls"][0]
    client.force_login(reviewer)
    response = client.post(
        reverse("approvals:call_reject", args=[pending.pk]),
        {"arguments_hash": pending.review_hash, "reason": "Not now"},
        follow=True,
    )
    assert "Rejected: Send an email" in response.text
    assert "[U+202E][U+200B]" in response.text.split('<ul class="flash">')[1].split("</ul>")[0]
    assert raw_hidden(response.text) == []
