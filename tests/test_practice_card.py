"""Until it is decided, a practice call looks exactly like a real one: its card (page, pane, push) and its
queue row are the same HTML as those of a real call with the same arguments, but for the ids."""

import json
import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.core import mail
from django.utils import timezone

from approvals.live import fanout
from approvals.models import Message, Run, ToolCall
from ops import notify, slack
from ops.models import NotificationPreference

from .practicing import plant, real_refund
from .reviewing import propose


class _Structure(HTMLParser):
    """The HTML as (tag, attributes) and text items, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.items = []

    def handle_starttag(self, tag, attrs):
        if ("name", "csrfmiddlewaretoken") in attrs:  # masked afresh on every render
            attrs = [(name, "CSRF" if name == "value" else value) for name, value in attrs]
        self.items.append(("<", tag, tuple(attrs)))

    def handle_endtag(self, tag):
        self.items.append((">", tag))

    def handle_data(self, data):
        if data.strip():
            self.items.append(("text", " ".join(data.split())))


def structure(html: str, call: ToolCall) -> list:
    """The structure, with this call's ids where the HTML names them (its URLs, element ids, data attributes,
    the run's link) put as placeholders."""
    pk, run = str(call.pk), str(call.run_id)
    for pattern, placeholder in (
        (rf"/calls/{pk}/", "/calls/PK/"),
        (rf"/runs/{run}/", "/runs/RUN/"),
        (rf'-{pk}(?=")', "-PK"),
        (rf'data-call-id="{pk}"', 'data-call-id="PK"'),
        (rf'value="{pk}:', 'value="PK:'),
        (rf"run {run}<", "run RUN<"),
        (re.escape(call.call_id), "CALL_ID"),
    ):
        html = re.sub(pattern, placeholder, html)
    parser = _Structure()
    parser.feed(html)
    return parser.items


@pytest.fixture
def pair(run, requester):
    """A practice call, and a real call the model proposed with the very same arguments."""
    practice = plant(real_refund(run))
    other = Run.objects.create(agent="support", request=run.request, requested_by=requester)
    Message.objects.create(run=other, seq=0, role=Message.Role.USER, content=other.request)
    real = propose(other, "issue_refund", practice.arguments, call_id="call_2")
    assert real.status == ToolCall.Status.PENDING
    # Proposed at the same moment, with the same deadline: "proposed 5 minutes ago" reads alike on both.
    when = timezone.now() - timedelta(minutes=5)
    ToolCall.objects.filter(pk__in=[practice.pk, real.pk]).update(created_at=when, expires_at=practice.expires_at)
    return practice, real


def _card(client, call: ToolCall) -> str:
    return client.get(f"/calls/{call.pk}/", HTTP_HX_REQUEST="true").content.decode()


def _row(client, call: ToolCall) -> str:
    page = client.get("/").content.decode()
    found = re.search(rf'<li[^>]*id="row-{call.pk}".*?</li>', page, re.S)
    assert found, f"no row for call {call.pk} in the queue"
    return found.group(0)


def test_a_practice_calls_card_is_the_same_html_as_a_real_calls(pair, client, reviewer):
    practice, real = pair
    client.force_login(reviewer)

    assert structure(_card(client, practice), practice) == structure(_card(client, real), real)


def test_a_practice_calls_push_is_the_same_html_as_a_real_calls(pair, reviewer):
    practice, real = pair

    pushed = [fanout.call_messages(call.pk, [reviewer.pk])[reviewer.pk] for call in pair]
    assert structure(pushed[0], practice) == structure(pushed[1], real)


def test_a_practice_calls_queue_row_is_the_same_html_as_a_real_calls(pair, client, reviewer):
    practice, real = pair
    client.force_login(reviewer)

    assert structure(_row(client, practice), practice) == structure(_row(client, real), real)


def _without_ids(text: str, call: ToolCall) -> str:
    """The text with the call's id (in '#id', its link, the buttons' value) and its run's masked; never an amount."""
    return re.sub(rf"(?<![$.\w-]){call.pk}(?![.\w-])", "PK", re.sub(rf"\brun {call.run_id}\b", "run RUN", text))


def test_a_practice_calls_email_and_slack_message_are_the_same_as_a_real_calls(pair, reviewer, settings):
    settings.REVIEWHUB_SITE_URL = "https://reviewhub.example.com"
    reviewer.email = "alice@shop.example"
    reviewer.save()
    NotificationPreference.objects.create(user=reviewer, email=NotificationPreference.Email.EACH)
    for call in pair:
        notify.call_waiting(call_id=call.pk)

    practice, real = pair
    mails = [_without_ids(f"{sent.subject}\n{sent.body}", call) for sent, call in zip(mail.outbox, pair)]
    assert len(mail.outbox) == 2 and mails[0] == mails[1]
    assert f"/calls/{practice.pk}/" in mail.outbox[0].body
    posts = [_without_ids(json.dumps(slack.blocks(call)), call) for call in pair]
    assert posts[0] == posts[1] and "issue_refund" in posts[0]
