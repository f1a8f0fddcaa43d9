"""Claims are leases: a claim holds for EXECUTION_LEASE_SECONDS, its claimer renews it while the body runs, and
a lapsed one is never silently run again (released for an idempotent tool, else outcome unknown)."""

import dataclasses
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from agents import loop
from approvals import services
from approvals.models import AuditEvent, Run, ToolCall
from approvals.tools import registry
from shop.models import Refund
from tests import support

pytestmark = pytest.mark.django_db

REFUND_35 = "Order A-1002 arrived broken. Please refund $35."


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.fixture
def refund_not_idempotent(monkeypatch):
    """issue_refund as a tool that cannot be run twice safely (a payment API without idempotency keys)."""
    tool = dataclasses.replace(registry.get("issue_refund"), idempotent=False)
    monkeypatch.setitem(registry._tools, tool.name, tool)
    return tool


def claimed_refund(make_run, reviewer) -> ToolCall:
    run = make_run(REFUND_35)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    call = ToolCall.objects.select_related("run").get(pk=call.pk)
    assert services.toolcall_claim(call=call)  # and then its worker died
    support.resumed.clear()
    return call


def test_a_claim_holds_for_one_lease_and_renewing_extends_it(make_run, reviewer, settings):
    call = claimed_refund(make_run, reviewer)
    lease = timedelta(seconds=settings.EXECUTION_LEASE_SECONDS)
    assert abs(call.lease_expires_at - (call.claimed_at + lease)) < timedelta(seconds=1)

    renewed = services.lease_renew(call_id=call.pk, claimed_at=call.claimed_at, now=later(4))

    assert renewed is not None and renewed > call.lease_expires_at
    assert ToolCall.objects.get(pk=call.pk).lease_expires_at == renewed


def test_a_lease_that_lapsed_is_not_renewed(make_run, reviewer):
    call = claimed_refund(make_run, reviewer)
    assert services.lease_renew(call_id=call.pk, now=later(60)) is None


def test_a_claim_taken_again_is_not_renewed_by_its_first_claimer(make_run, reviewer):
    call = claimed_refund(make_run, reviewer)
    ToolCall.objects.filter(pk=call.pk).update(claimed_at=later(1))  # another claim since
    assert services.lease_renew(call_id=call.pk, claimed_at=call.claimed_at) is None


def test_a_lapsed_claim_on_a_tool_that_is_not_idempotent_becomes_outcome_unknown_and_never_runs_again(
    make_run, reviewer, refund_not_idempotent
):
    call = claimed_refund(make_run, reviewer)

    assert services.sweep_apply(now=later(3))["unknown"] == 0  # the lease still holds
    assert services.sweep_apply(now=later(60))["unknown"] == 1

    call.refresh_from_db()
    assert call.status == ToolCall.Status.OUTCOME_UNKNOWN and call.lease_expires_at is None
    event = AuditEvent.objects.get(tool_call=call, kind="outcome_unknown")
    assert event.payload["facts"]["order_status"] == call.facts["order_status"]  # fetched again
    assert Run.objects.get(pk=call.run_id).status == Run.Status.WAITING
    loop.advance(call.run_id)
    assert services.toolcall_claim(call=call) is False
    assert Refund.objects.count() == 0
    assert services.stuck_runs(now=later(3600)) == {}  # it waits for a person, not for the sweep


def test_an_idempotent_tool_whose_claim_lapsed_runs_once_more_with_the_same_key(
    make_run, reviewer, monkeypatch, django_capture_on_commit_callbacks
):
    keys = []
    tool = registry.get("issue_refund")

    def recording(args, ctx):
        keys.append(ctx.idempotency_key)
        return tool.func(args, ctx)

    monkeypatch.setitem(registry._tools, tool.name, dataclasses.replace(tool, func=recording))
    call = claimed_refund(make_run, reviewer)

    with django_capture_on_commit_callbacks(execute=True):
        assert services.sweep_apply(now=later(60))["released"] == 1
    assert AuditEvent.objects.filter(tool_call=call, kind="lease_lapsed").count() == 1
    assert support.resumed == [call.run_id]
    loop.advance(call.run_id)
    loop.advance(call.run_id)

    assert keys == [call.idempotency_key]
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    assert Refund.objects.get().idempotency_key == call.idempotency_key


def test_a_worker_that_takes_a_lapsed_idempotent_call_before_the_sweep_releases_it_in_the_trail_once(
    make_run, reviewer
):
    call = claimed_refund(make_run, reviewer)
    ToolCall.objects.filter(pk=call.pk).update(lease_expires_at=later(-1))  # lapsed, no sweep yet

    loop.advance(call.run_id)  # the worker takes it again at once

    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    released = AuditEvent.objects.filter(tool_call=call, kind="lease_lapsed")
    assert [event.payload["released"] for event in released] == [True]
    assert services.sweep_apply(now=later(60))["released"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_long_body_keeps_its_claim_past_the_lease(make_run, reviewer, settings, monkeypatch, refund_not_idempotent):
    settings.EXECUTION_LEASE_SECONDS = 1
    swept = []

    def slow(args, ctx):
        time.sleep(2.5)  # two and a half leases: its worker renews the claim meanwhile
        swept.append(services.sweep_apply())
        return refund_not_idempotent.func(args, ctx)

    monkeypatch.setitem(registry._tools, "issue_refund", dataclasses.replace(refund_not_idempotent, func=slow))
    run = make_run(REFUND_35)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    loop.advance(run.pk)

    assert swept and swept[0]["unknown"] == swept[0]["released"] == 0
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
    assert Refund.objects.count() == 1
    assert not AuditEvent.objects.filter(tool_call=call, kind__in=["outcome_unknown", "lease_lapsed"]).exists()
