"""Webhooks: a decision is delivered signed as Standard Webhooks specifies, to checked targets, retried."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client import REGISTRY
from standardwebhooks.webhooks import Webhook as Verifier

from approvals import services
from approvals.models import ToolCall
from remote import resume, targets, tasks
from remote.deliveries import ATTEMPTS, BACKOFF
from remote.models import Webhook, WebhookDelivery
from remote.services import delivery_attempt
from tests.agentapi import decide


@pytest.fixture
def scheduled(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks, "schedule_delivery", lambda pk, countdown: calls.append((pk, countdown)))
    return calls


def test_registering_shows_the_secret_once(hooked):
    agent, hook = hooked
    assert hook["secret"].startswith("whsec_")
    assert "secret" not in json.dumps(agent.get("/tools").json())


def test_a_decision_is_delivered_signed_and_verifies_with_standardwebhooks(
    hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks
):
    agent, hook = hooked
    call = decide(agent, reviewer, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get(tool_call=call)
    assert scheduled == [(delivery.pk, 0)]

    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"

    headers, body = receiver[1].received[0]
    event = Verifier(hook["secret"]).verify(body, headers)
    assert event["type"] == "call.decided" and event["data"]["id"] == call.pk
    assert event["data"]["decision"]["verdict"] == "approve" and event["data"]["decision"]["execution_key"]
    assert headers["webhook-id"] == delivery.message_id
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.last_status_code == 200


def test_a_decisions_delivery_commits_with_it_and_is_sent_even_if_its_process_stops_at_the_commit(
    hooked, reviewer, scheduled, django_capture_on_commit_callbacks
):
    """The delivery is made in the decision's transaction (the remote advancer's outbox), not after its commit by
    the deciding process: one lost there (a restart, a kill) loses no webhook; the periodic pass sends it."""
    agent, _ = hooked
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    with django_capture_on_commit_callbacks(execute=False):  # the process stops as the decision commits
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)

    delivery = WebhookDelivery.objects.get(tool_call=call)  # made after the commit, before: DoesNotExist
    assert delivery.payload["data"]["status"] == "approved" and delivery.status == "pending"
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=2))
    assert tasks.deliver_due() == 1 and scheduled[-1] == (delivery.pk, 0)


def test_a_decision_reads_the_calls_declared_tool_once(hooked, reviewer, django_capture_on_commit_callbacks):
    """Checked, described, audited and logged after the commit: the declaration is read once and kept on the call
    (it read it four times: three in the decision's transaction, one after it, before the agent was woken)."""
    agent, _ = hooked
    call = ToolCall.objects.get(pk=agent.propose()["id"])
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)

    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "remote_remotecall"."tool_id"')]
    assert len(reads) == 1, reads


def test_a_decisions_call_is_built_once_for_its_long_polls_and_its_webhook(
    hooked, reviewer, scheduled, monkeypatch, django_capture_on_commit_callbacks
):
    """The outbox builds the decided call for the wake-up (remote/resume._told); its delivery carries the same."""
    agent, _ = hooked
    built: list[int] = []
    original = resume.call_json
    monkeypatch.setattr(resume, "call_json", lambda call, *args: built.append(call.pk) or original(call, *args))
    call = decide(agent, reviewer, django_capture_on_commit_callbacks)

    delivery = WebhookDelivery.objects.get(tool_call=call)
    assert built == [call.pk]
    assert delivery.payload["data"] == resume._told(call.pk)[str(call.pk)]


def test_a_tampered_delivery_does_not_verify(hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks):
    agent, hook = hooked
    delivery_attempt(
        delivery_id=WebhookDelivery.objects.get(
            tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks)
        ).pk
    )
    headers, body = receiver[1].received[0]
    with pytest.raises(Exception, match="signature"):
        Verifier(hook["secret"]).verify(body.replace("approve", "reject"), headers)


def test_a_failed_delivery_is_retried_with_backoff_then_given_up(
    hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks
):
    agent, _ = hooked
    receiver[1].status = 500
    delivery = WebhookDelivery.objects.get(tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks))

    assert tasks.deliver_webhook(delivery.pk) == "retry"
    assert scheduled[-1] == (delivery.pk, BACKOFF[0])
    assert delivery_attempt(delivery_id=delivery.pk) == "skipped"  # not due yet
    WebhookDelivery.objects.filter(pk=delivery.pk).update(attempts=ATTEMPTS - 1, next_attempt_at="2000-01-01T00:00Z")
    assert delivery_attempt(delivery_id=delivery.pk) == "failed"

    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.last_status_code == 500
    assert sum(BACKOFF) >= 24 * 3600  # retried for about a day


def test_a_redirect_is_not_followed(hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks):
    agent, _ = hooked
    receiver[1].status = 302
    delivery = WebhookDelivery.objects.get(tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks))

    assert delivery_attempt(delivery_id=delivery.pk) == "retry"

    delivery.refresh_from_db()
    assert "redirects are not followed" in delivery.last_error and len(receiver[1].received) == 1


def test_the_admin_redelivers(
    hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks, django_user_model
):
    agent, _ = hooked
    delivery = WebhookDelivery.objects.get(tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks))
    delivery_attempt(delivery_id=delivery.pk)
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root"))

    with django_capture_on_commit_callbacks(execute=True):
        admin.post("/admin/remote/webhookdelivery/", {"action": "redeliver", "_selected_action": [delivery.pk]})

    assert scheduled[-1] == (delivery.pk, 0)
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"
    assert len(receiver[1].received) == 2


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://100.64.0.1/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_a_private_or_metadata_target_is_refused_by_default(url):
    with pytest.raises(targets.TargetRefused):
        targets.resolve(url, allow_private=False)


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data/", "http://0.0.0.0/", "http://[fd00:ec2::254]/"]
)
def test_metadata_addresses_are_refused_even_when_private_ones_are_allowed(url):
    with pytest.raises(targets.TargetRefused):
        targets.resolve(url, allow_private=True)


@pytest.mark.parametrize("url", ["ftp://example.com/", "http:///nohost", "http://user:pw@example.com/", "hook"])
def test_a_url_that_is_not_a_plain_http_target_is_refused(url):
    with pytest.raises(targets.TargetRefused):
        targets.resolve(url, allow_private=True)


def test_registering_a_loopback_target_is_refused_naming_the_url(agent, settings):
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = False
    response = agent.post("/webhooks", {"url": "http://127.0.0.1:8000/hook"})
    assert response.status_code == 422 and "url" in response.json()["errors"]
    assert not Webhook.objects.exists()


def test_a_target_that_turned_private_is_not_sent_to(
    hooked, receiver, reviewer, scheduled, settings, django_capture_on_commit_callbacks
):
    agent, _ = hooked
    delivery = WebhookDelivery.objects.get(tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks))
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = False

    assert delivery_attempt(delivery_id=delivery.pk) == "retry"

    assert receiver[1].received == []
    delivery.refresh_from_db()
    assert "refused" in delivery.last_error


def test_the_admin_adds_a_webhook_showing_its_secret_once_and_refuses_a_private_target(
    agent, settings, django_user_model
):
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root"))
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = False

    refused = admin.post(
        "/admin/remote/webhook/add/", {"agent": agent.agent.pk, "url": "http://10.0.0.1/h", "active": "on"}
    )
    assert refused.status_code == 200 and not Webhook.objects.exists()
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = True
    added = admin.post(
        "/admin/remote/webhook/add/", {"agent": agent.agent.pk, "url": "http://10.0.0.1/h", "active": "on"}, follow=True
    )

    secret = Webhook.objects.get().secret
    assert secret in added.content.decode()
    assert secret not in admin.get(f"/admin/remote/webhook/{Webhook.objects.get().pk}/change/").content.decode()


def test_each_delivery_attempt_is_counted_in_the_metrics_by_outcome(
    hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks
):
    def counted(outcome: str) -> float:
        return REGISTRY.get_sample_value("reviewhub_webhook_deliveries_total", {"outcome": outcome}) or 0.0

    agent, _ = hooked
    before = counted("delivered"), counted("failed")
    receiver[1].status = 500
    delivery = WebhookDelivery.objects.get(tool_call=decide(agent, reviewer, django_capture_on_commit_callbacks))
    delivery_attempt(delivery_id=delivery.pk)
    receiver[1].status = 200
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at="2000-01-01T00:00Z")
    delivery_attempt(delivery_id=delivery.pk)

    assert (counted("delivered"), counted("failed")) == (before[0] + 1, before[1] + 1)


def test_a_decision_late_in_a_long_thread_reads_what_the_first_one_did(
    hooked, reviewer, scheduled, django_capture_on_commit_callbacks
):
    """The thread's calls delivered before are left out in the statement that finds what to deliver, not read
    one by one at every new decision."""
    agent, _ = hooked
    counts = []
    for n in range(6):
        call = ToolCall.objects.get(pk=agent.propose(idempotency_key=f"long-{n}")["id"])
        with django_capture_on_commit_callbacks(execute=True):
            services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
        with CaptureQueriesContext(connection) as queries:
            assert resume.deliveries_enqueue(run_id=call.run_id) == []  # each decided call delivered once already
        counts.append(len(queries))
    deliveries = WebhookDelivery.objects.filter(pk__in=[pk for pk, _ in scheduled])
    assert len(scheduled) == deliveries.count() == 6 and len({d.tool_call.run_id for d in deliveries}) == 1
    assert counts[0] == counts[-1], counts


def test_a_webhook_added_later_gets_the_threads_earlier_decisions_at_its_next_one(
    hooked, receiver, reviewer, scheduled, django_capture_on_commit_callbacks
):
    agent, _ = hooked
    first = decide(agent, reviewer, django_capture_on_commit_callbacks)
    assert agent.post("/webhooks", {"url": receiver[0] + "/second"}).status_code == 201
    later = ToolCall.objects.get(pk=agent.propose(idempotency_key="later")["id"])
    with django_capture_on_commit_callbacks(execute=True):
        services.toolcall_decide(call_id=later.pk, reviewer=reviewer, verdict="approve", shown_hash=later.review_hash)

    sent = set(WebhookDelivery.objects.values_list("tool_call_id", "webhook__url"))
    assert sent == {(call.pk, url) for call in (first, later) for url in (receiver[0], receiver[0] + "/second")}
