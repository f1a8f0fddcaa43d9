"""No agent ever sees or executes a practice call: not through the agent API (its list, its read, its claim),
not through the MCP gateway's claim. Practice calls are planted only in local runs; these tests put one in
a remote run on purpose, to show the refusal holds on those paths too."""

import pytest

from approvals import access, services
from approvals.models import AuditEvent, ToolCall
from approvals.planted import planted
from gateway import services as gateway_services
from practice.models import PracticeCall
from remote import services as remote_services
from remote.errors import Conflict, NotFound
from remote.models import Webhook, WebhookDelivery
from remote.schemas import ToolIn
from tests.agentapi import PROPOSAL, REFUND_TOOL


def _as_practice(call: ToolCall) -> ToolCall:
    PracticeCall.objects.create(
        run=call.run, tool_call=call, source=call, tool_name=call.tool_name, mistake="x", explanation="a test"
    )
    return call


@pytest.fixture
def approved_then_practice(refund_agent, reviewer):
    """A remote call alice approved, then made a practice call: (the agent, the call)."""
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    call.refresh_from_db()
    key = remote_services.execution_key(call)
    return refund_agent, _as_practice(call), key


def test_the_agent_api_neither_reads_nor_claims_a_practice_call(approved_then_practice):
    agent, call, key = approved_then_practice

    assert agent.get(f"/calls/{call.pk}").status_code == 404
    assert agent.post(f"/calls/{call.pk}/claim", {"execution_key": key}).status_code == 404
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED
    assert not AuditEvent.objects.filter(tool_call=call, kind=AuditEvent.Kind.EXECUTING).exists()


def test_the_remote_claim_refuses_a_practice_call_even_when_it_is_found(approved_then_practice, monkeypatch):
    agent, call, key = approved_then_practice
    monkeypatch.setattr(planted, "_hide", lambda queryset: queryset)  # as if the list forgot to hide it

    with pytest.raises(Conflict):
        remote_services.call_claim(agent=agent.agent, call_id=call.pk, key=key)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED


def test_the_mcp_gateway_never_claims_a_practice_call(reviewer):
    gateway = gateway_services.gateway_create(name="shop-gateway")
    declaration = ToolIn(**REFUND_TOOL).model_dump()
    remote_services.tool_declare(agent=gateway.agent, name="issue_refund", declaration=declaration)
    call, _ = remote_services.call_propose(agent=gateway.agent, proposal=PROPOSAL)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    _as_practice(call)

    with pytest.raises((NotFound, Conflict)):
        gateway_services.call_claim(gateway=gateway, call_id=call.pk)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED


def test_agents_are_never_shown_a_practice_call(approved_then_practice):
    agent, call, _ = approved_then_practice
    assert not access.agent_calls(agent.agent.user).filter(pk=call.pk).exists()
    assert access.agent_calls(agent.agent.user, ToolCall.objects.exclude(pk=call.pk)).count() == 0


def _decide(call: ToolCall, reviewer, capture) -> None:
    with capture(execute=True):
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.review_hash, reason="No."
        )


def test_a_decision_on_a_practice_call_sends_no_webhook(refund_agent, reviewer, django_capture_on_commit_callbacks):
    Webhook.objects.create(agent=refund_agent.agent, url="http://127.0.0.1:9/hook", secret="whsec_test")
    real = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    practice = ToolCall.objects.get(pk=refund_agent.propose(thread_id="support-4712", idempotency_key="2")["id"])
    _as_practice(practice)

    _decide(real, reviewer, django_capture_on_commit_callbacks)
    _decide(practice, reviewer, django_capture_on_commit_callbacks)

    assert list(WebhookDelivery.objects.values_list("tool_call_id", flat=True)) == [real.pk]
