import dataclasses
from datetime import timedelta

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.db import connections
from django.utils import timezone

from approvals import services
from approvals.models import ToolCall, ToolSetting
from approvals.tools import registry
from tests.badinput import pending_refund
from tests.reviewing import REFUND_35, WHICH, pending_call


@pytest.fixture
def call(make_run) -> ToolCall:
    """A refund of $40 the scripted model proposed, waiting for review."""
    return pending_call(make_run)


@pytest.fixture
def held_refund(shop, requester, reviewer, client) -> ToolCall:
    """A refund of $40 proposed straight through the gate (no model), waiting for review; alice is logged in."""
    client.force_login(reviewer)
    return pending_refund(requester)


@pytest.fixture
def auditor_client(client, auditor, held_refund):
    """The test client logged in as audrey, the auditor, with a call in the record to list."""
    client.force_login(auditor)
    return client


@pytest.fixture
def question(make_run) -> ToolCall:
    """The support agent's question to a person: which of Dana's orders arrived broken."""
    return make_run(WHICH).tool_calls.get(tool_name="choose_order")


@pytest.fixture
def gated(request, make_run) -> ToolCall:
    """A refund of $35 waiting for review; issue_refund is high impact: 5 s on the card (the test module's
    HIGH_IMPACT_SECONDS if it says), type the amount."""
    seconds = getattr(request.module, "HIGH_IMPACT_SECONDS", 5)
    ToolSetting.objects.create(
        tool_name="issue_refund", high_impact=True, high_impact_seconds=seconds, confirm_field="amount"
    )
    return make_run(REFUND_35).tool_calls.get(status=ToolCall.Status.PENDING)


@pytest.fixture
def unknown(make_run, reviewer, monkeypatch) -> ToolCall:
    """A refund (of a tool that is not idempotent) whose worker died after its claim: outcome unknown."""
    tool = dataclasses.replace(registry.get("issue_refund"), idempotent=False)
    monkeypatch.setitem(registry._tools, tool.name, tool)
    run = make_run(REFUND_35)
    call = run.tool_calls.get(status=ToolCall.Status.PENDING)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    assert services.toolcall_claim(call=ToolCall.objects.select_related("run").get(pk=call.pk))
    assert services.sweep_apply(now=timezone.now() + timedelta(seconds=60))["unknown"] == 1
    return ToolCall.objects.select_related("run").get(pk=call.pk)


@pytest_asyncio.fixture
async def async_connections_closed():
    """For async tests: their ORM work ran in asgiref's thread, whose connections are closed there afterwards."""
    yield
    await sync_to_async(connections.close_all)()
