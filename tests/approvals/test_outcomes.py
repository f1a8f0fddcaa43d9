"""Outcome unknown: a card in the queue ("Did this happen?") with three answers — it ran (the output recorded),
it did not run (run it now, once), fail the run — settled once, by a reviewer allowed to, through
POST /calls/<pk>/settle/."""

import pytest
from django.test import Client
from django.urls import reverse

from agents import loop
from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from shop.models import Refund

pytestmark = pytest.mark.django_db


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def settle(user, call: ToolCall, **fields):
    return as_user(user).post(reverse("approvals:call_settle", args=[call.pk]), fields)


def test_the_card_asks_whether_it_happened_and_offers_the_three_answers(unknown, reviewer):
    page = as_user(reviewer).get(reverse("approvals:call", args=[unknown.pk])).content.decode()

    assert "Did this happen?" in page and "Refund $35.00" in page
    for answer in ('value="ran"', 'value="not_run"', 'value="fail"'):
        assert answer in page


def test_the_queue_lists_it_and_its_status_filter_finds_it(unknown, reviewer):
    client = as_user(reviewer)
    everything = client.get(reverse("approvals:queue")).content.decode()
    unknown_only = client.get(reverse("approvals:queue"), {"status": "outcome_unknown"}).content.decode()
    pending_only = client.get(reverse("approvals:queue"), {"status": "pending"}).content.decode()

    assert f'id="row-{unknown.pk}"' in everything and "Outcome unknown:" in everything
    assert f'id="row-{unknown.pk}"' in unknown_only
    assert f'id="row-{unknown.pk}"' not in pending_only


def test_the_queue_badge_counts_it_as_the_queue_lists_it(unknown, reviewer):
    from approvals.selectors import pending_count, sees_calls_and_pending_count

    assert pending_count(reviewer) == 1
    assert sees_calls_and_pending_count(reviewer, [unknown.pk]) == ({unknown.pk}, 1)
    page = as_user(reviewer).get(reverse("approvals:queue")).content.decode()
    assert 'id="queue-count" data-count="1"' in page


def test_it_ran_records_the_output_and_the_run_goes_on(unknown, reviewer, model, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = settle(reviewer, unknown, answer="ran", output="Refunded $35.00 (seen in the payment dashboard).")
    assert response.status_code == 302

    call = ToolCall.objects.get(pk=unknown.pk)
    assert call.status == ToolCall.Status.EXECUTED and call.output.startswith("Refunded $35.00 (seen")
    settled = AuditEvent.objects.get(tool_call=call, kind="outcome_settled")
    assert settled.actor == reviewer and settled.payload["answer"] == "ran"
    loop.advance(call.run_id)
    told = [m["content"] for m in model.requests()[-1]["messages"] if m["role"] == "tool"]
    assert told[-1].startswith("Refunded $35.00 (seen")
    assert Refund.objects.count() == 0  # nothing ran again


def test_it_did_not_run_runs_it_now_exactly_once(unknown, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        settle(reviewer, unknown, answer="not_run")
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.APPROVED

    loop.advance(unknown.run_id)
    loop.advance(unknown.run_id)

    assert Refund.objects.get().idempotency_key == unknown.idempotency_key
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.EXECUTED
    assert AuditEvent.objects.filter(tool_call=unknown, kind="executed").count() == 1


def test_fail_fails_the_run_with_the_reason_and_retry_takes_it_further(unknown, reviewer, requester, model):
    settle(reviewer, unknown, answer="fail", reason="the payment provider is down; refund by hand")

    run = Run.objects.get(pk=unknown.run_id)
    assert run.status == Run.Status.FAILED and "the payment provider is down" in run.last_error
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.FAILED
    services.run_retry(run=run, user=requester)
    loop.advance(run.pk)
    told = [m["content"] for m in model.requests()[-1]["messages"] if m["role"] == "tool"]
    assert "the payment provider is down" in told[-1] and Refund.objects.count() == 0


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"answer": "ran", "output": "  "}, "output", "Write what it did"),
        ({"answer": "fail", "reason": ""}, "reason", "Give the reason"),
        ({"answer": "maybe"}, "answer", "Say whether it ran"),
    ],
)
def test_an_incomplete_answer_is_refused_naming_the_field_and_changes_nothing(
    unknown, reviewer, fields, field, message
):
    response = settle(reviewer, unknown, **fields)

    assert response.status_code == 400 and message in response.content.decode()
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.OUTCOME_UNKNOWN
    assert not AuditEvent.objects.filter(tool_call=unknown, kind="outcome_settled").exists()


def test_auditors_and_the_runs_requester_cannot_settle_and_outsiders_cannot_see_it(
    unknown, auditor, requester, outsider
):
    assert settle(auditor, unknown, answer="not_run").status_code == 403
    assert settle(requester, unknown, answer="not_run").status_code == 403
    assert settle(outsider, unknown, answer="not_run").status_code == 404
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.OUTCOME_UNKNOWN


def test_a_second_answer_is_refused(unknown, reviewer, reviewer2):
    settle(reviewer, unknown, answer="not_run")
    assert settle(reviewer2, unknown, answer="ran", output="it ran").status_code == 409
    assert AuditEvent.objects.filter(tool_call=unknown, kind="outcome_settled").count() == 1


def test_a_run_waiting_on_an_unknown_outcome_can_be_cancelled(unknown, requester):
    services.run_cancel(run=unknown.run, user=requester)

    assert Run.objects.get(pk=unknown.run_id).status == Run.Status.CANCELLED
    assert ToolCall.objects.get(pk=unknown.pk).status == ToolCall.Status.CANCELLED
