"""MCP's tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) through the stdio gateway, driven by the SDK's
own client with the extension declared: a reviewed call answers at once with a task the client polls with tasks/get
(working while it waits, then completed with the result or the rejection), runs once when approved, and tasks/cancel
withdraws a call nobody decided. A client without the extension keeps the waiting tools/call."""

import asyncio
from typing import Literal

import pytest
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.types import (
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
)
from pydantic import TypeAdapter

from approvals.models import AuditEvent, ToolCall
from tests.reviewing import decide
from tests.waiting import wait_for

from .mcpgateway import McpClient, http_transport, refunds
from .test_mcp_gateway import pending_call

pytestmark = pytest.mark.django_db(transaction=True)

REFUND = {"order_id": "A-1001", "amount": 49, "reason": "arrived broken"}
RAW = TypeAdapter(dict)


class TaskCreated(Result):
    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None


class Tasks(ClientExtension):
    """The client's side of the extension: a task's tools/call is resolved by polling tasks/get."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self):
        self.created: list[TaskCreated] = []
        self.seen: list[dict] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.resolve)]

    async def resolve(self, created: TaskCreated, ctx) -> CallToolResult:
        self.created.append(created)
        while True:
            task = await get_task(ctx.session, created.task_id)
            self.seen.append(task)
            if task["status"] in ("completed", "failed", "cancelled"):
                return CallToolResult.model_validate(task.get("result") or {"content": [], "isError": True})
            await asyncio.sleep(0.2)


async def get_task(session, task_id: str) -> dict:
    return await session.send_request(GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), RAW)


@pytest.fixture(autouse=True)
def _a_short_answer_after(gateway):
    """The gateway answers a client without tasks after 2 s."""
    gateway.answer_after_seconds = 2
    gateway.save()


def test_a_reviewed_call_is_a_task_working_while_it_waits_then_completed_with_the_result_once(
    stdio, reviewer, tmp_path
):
    tasks = Tasks()
    with McpClient(stdio, extensions=[tasks]) as mcp:
        later = mcp.call_tool_later("refund", REFUND)
        call = pending_call()
        assert wait_for(lambda: len(tasks.seen) >= 2, timeout=30)  # polled while it waits: no error, no timeout
        decide(call, reviewer, "approve")
        result = later.result(60)

    assert not result.is_error and "Refunded" in result.content[0].text
    assert refunds(tmp_path) == [("A-1001", 49.0)]
    created = tasks.created[0]
    assert created.status == "working" and f"call {call.pk}" in created.status_message
    assert tasks.seen[0]["status"] == "working" and "Waiting for a reviewer" in tasks.seen[0]["statusMessage"]
    assert tasks.seen[-1]["status"] == "completed"
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED


def test_a_rejected_call_completes_as_a_tool_error_with_the_reason(stdio, reviewer, tmp_path):
    tasks = Tasks()
    with McpClient(stdio, extensions=[tasks]) as mcp:
        later = mcp.call_tool_later("refund", REFUND)
        decide(pending_call(), reviewer, "reject", reason="Not for this order")
        result = later.result(60)

    assert result.is_error and "Not for this order" in result.content[0].text
    assert tasks.seen[-1]["status"] == "completed" and refunds(tmp_path) == []


def test_tasks_cancel_withdraws_a_call_nobody_decided(stdio, tmp_path):
    with McpClient(stdio, extensions=[Tasks()]) as mcp:
        created = mcp.run(mcp.client.session.call_tool("refund", REFUND, allow_claimed=True))
        request = CancelTaskRequest(params=CancelTaskRequestParams(task_id=created.task_id))
        mcp.run(mcp.client.session.send_request(request, RAW))
        after = mcp.run(get_task(mcp.client.session, created.task_id))

    call = ToolCall.objects.get()
    assert call.status == ToolCall.Status.CANCELLED
    assert AuditEvent.objects.filter(tool_call=call, kind="cancelled").exists()
    assert after["status"] == "completed" and after["result"]["isError"] is True and refunds(tmp_path) == []


def test_a_task_id_that_is_not_the_gateways_is_refused(stdio):
    from mcp.shared.exceptions import MCPError

    with McpClient(stdio, extensions=[Tasks()]) as mcp:
        with pytest.raises(MCPError) as refused:
            mcp.run(get_task(mcp.client.session, "not-a-task"))

    assert refused.value.error.code == -32602


def test_a_client_without_the_extension_keeps_the_waiting_call(stdio):
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("refund", REFUND)

    assert result.is_error and "still waiting for a reviewer" in result.content[0].text
    assert ToolCall.objects.get().status == ToolCall.Status.PENDING


def test_over_streamable_http_the_same_task_is_polled_and_completes_once(served, reviewer):
    url, token = served
    tasks = Tasks()
    with McpClient(http_transport(url, token), extensions=[tasks]) as mcp:
        later = mcp.call_tool_later("refund", REFUND)
        decide(pending_call(), reviewer, "approve")
        result = later.result(60)

    assert not result.is_error and tasks.created and tasks.seen[-1]["status"] == "completed"
    assert ToolCall.objects.get().status == ToolCall.Status.EXECUTED
