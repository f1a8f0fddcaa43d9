"""Nothing waits forever: each tool has a time limit and an outcome on expiry; the
periodic pass flags and notifies near deadlines, escalates or expires overdue calls."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from agents import tasks
from approvals import services
from approvals.models import AuditEvent, Decision, Run, ToolCall, ToolSetting
from tests import support
from tests.reviewing import advance, call_url, pending_call, post

pytestmark = pytest.mark.django_db


def overdue(call: ToolCall) -> ToolCall:
    ToolCall.objects.filter(pk=call.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    call.refresh_from_db()
    return call


def test_a_waiting_call_gets_the_sites_time_limit_by_default(make_run):
    call = pending_call(make_run)
    assert call.expires_at - call.created_at == pytest.approx(timedelta(hours=1), abs=timedelta(seconds=5))
    assert call.expires_at - call.warn_at == timedelta(minutes=10)


def test_each_tool_has_its_own_time_limit(make_run):
    ToolSetting.objects.create(tool_name="issue_refund", timeout_minutes=5, warn_minutes=1)
    call = pending_call(make_run)
    assert call.expires_at - call.created_at == pytest.approx(timedelta(minutes=5), abs=timedelta(seconds=5))
    assert call.expires_at - call.warn_at == timedelta(minutes=1)
    overdue(call)
    services.expire_overdue()
    assert Decision.objects.get().reason == "no decision within 5 min"


def test_an_overdue_call_is_rejected_by_the_system_and_the_run_resumes(
    make_run, model, django_capture_on_commit_callbacks
):
    call = overdue(pending_call(make_run))
    support.resumed.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.expire_overdue() == {"warned": 0, "expired": 1}
    decision = Decision.objects.get()
    assert (decision.reviewer, decision.verdict, decision.reason, decision.final) == (
        None,
        "expire",
        "no decision within 1 h",
        True,
    )
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXPIRED
    assert call.output == "Rejected by the system: no decision within 1 h. Nothing was done."
    assert support.resumed == [call.run_id]
    advance(call)
    assert model.requests()[-1]["messages"][-1]["content"] == call.output
    # The model read it and answered: its answer waits as a draft reply to the customer.
    assert Run.objects.get(pk=call.run_id).status == Run.Status.WAITING
    assert ToolCall.objects.get(run=call.run_id, status="pending").kind == ToolCall.Kind.CHECKPOINT


def test_the_periodic_pass_leaves_calls_that_are_not_due(make_run):
    call = pending_call(make_run)
    assert services.deadlines_apply() == {"warned": 0, "expired": 0}
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING


def test_the_periodic_pass_is_in_the_celery_beat_schedule():
    assert settings.CELERY_BEAT_SCHEDULE["expire-overdue-calls"]["task"] == "agents.tasks.expire_overdue"
    assert tasks.expire_overdue.name == "agents.tasks.expire_overdue"


def test_an_overdue_call_can_escalate_to_a_named_group_once(
    make_run, client, reviewer, senior, django_capture_on_commit_callbacks
):
    ToolSetting.objects.create(
        tool_name="issue_refund", on_expiry="escalate", escalate_to=Group.objects.get(name="senior")
    )
    call = overdue(pending_call(make_run))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.expire_overdue() == 0
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert call.review_group.name == "senior"
    assert call.expires_at > timezone.now() + timedelta(minutes=59)
    assert AuditEvent.objects.filter(tool_call=call, kind="escalated", payload__to_group="senior").exists()
    assert [m.to for m in mail.outbox] == [["sara@shop.example"]]
    assert "escalated to the group “senior”" in mail.outbox[0].body
    client.force_login(reviewer)
    assert client.get(call_url(call)).status_code == 404
    client.force_login(senior)
    assert "escalated to “senior”" in client.get(call_url(call)).content.decode()
    overdue(call)
    assert services.expire_overdue() == 1
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXPIRED


def test_a_call_near_its_deadline_is_flagged_and_its_reviewers_notified_once(
    make_run,
    client,
    reviewer,
    reviewer2,
    senior,
    django_capture_on_commit_callbacks,
):
    reviewer.email, reviewer2.email = "alice@shop.example", ""
    reviewer.save()
    reviewer2.save()
    call = pending_call(make_run)
    ToolCall.objects.filter(pk=call.pk).update(warn_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.deadlines_apply() == {"warned": 1, "expired": 0}
        assert services.deadlines_apply() == {"warned": 0, "expired": 0}
    recipients = sorted(address for m in mail.outbox for address in m.to)
    assert recipients == ["alice@shop.example", "sara@shop.example"]  # not the requester; bob has no address
    assert mail.outbox[0].subject == f"Decide soon: issue_refund #{call.pk}"
    assert "This call expires in" in mail.outbox[0].body and call_url(call) in mail.outbox[0].body
    client.force_login(reviewer)
    html = client.get(reverse("approvals:queue")).content.decode()
    assert f'class="qrow status-pending near-deadline" id="row-{call.pk}"' in html
    assert "expires soon" in client.get(call_url(call)).content.decode()  # on its card


def test_a_call_for_a_group_notifies_only_that_group(make_run, reviewer, senior, django_capture_on_commit_callbacks):
    reviewer.email = "alice@shop.example"
    reviewer.save()
    ToolSetting.objects.create(tool_name="issue_refund", group=Group.objects.get(name="senior"))
    call = pending_call(make_run)
    ToolCall.objects.filter(pk=call.pk).update(warn_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        services.deadlines_apply()
    assert [m.to for m in mail.outbox] == [["sara@shop.example"]]


def test_a_decided_call_does_not_expire(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "approve")
    overdue(ToolCall.objects.get(pk=call.pk))
    assert services.expire_overdue() == 0
    assert Decision.objects.get().verdict == "approve"


def test_a_decision_after_expiry_is_told_who_decided(make_run, client, reviewer):
    call = overdue(pending_call(make_run))
    services.expire_overdue()
    client.force_login(reviewer)
    response = post(client, call, "approve")
    assert response.status_code == 409
    assert "Already expired by system" in response.content.decode()
