"""A checkpoint after a tool: the tool's output is held as a draft a person approves or edits before the
model reads it again; the model then reads the checkpoint's output, which carries the approved text."""

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents import loop, services
from agents.agents import Agent, Checkpoint, after_tool
from agents.agents import registry as agents
from approvals import services as records
from approvals.models import Run, Tier, ToolCall
from approvals.tools import CHECKPOINT, Tool
from approvals.tools import registry as tools

pytestmark = pytest.mark.django_db


class NoteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    draft: str = Field(min_length=1, max_length=10000)


STATUS_NOTE = Tool(
    name="status_note",
    description="Checkpoint: what we tell about an order's status.",
    args_model=NoteArgs,
    tier=Tier.APPROVAL,
    func=lambda args, ctx: f"Checked by a person: {args.draft}",
    describe=lambda args: "The status we tell",
    kind=CHECKPOINT,
)


@pytest.fixture
def checked_agent(monkeypatch):
    """The read-only orders agent, with a person checking every order status it looks up."""
    for registry, attribute in ((tools, "_tools"), (tools, "_allowed"), (agents, "_agents")):
        monkeypatch.setattr(registry, attribute, dict(getattr(registry, attribute)))
    tools.register(STATUS_NOTE)
    checkpoint = Checkpoint("status_note", "The status we tell", pauses=after_tool("get_order_status"))
    orders = agents.get("orders")
    return agents.register(Agent("checked", "Checked orders", orders.system_prompt, orders.tools, (), (checkpoint,)))


def test_the_tools_output_waits_as_a_draft_and_the_model_reads_the_approved_edit(
    checked_agent, shop, requester, reviewer, model
):
    run = services.run_start(agent_name="checked", request="Check the status of order A-1003.", requested_by=requester)
    loop.advance(run.pk)
    run.refresh_from_db()
    lookup = run.tool_calls.get(tool_name="get_order_status")
    held = run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT)
    assert run.status == Run.Status.WAITING and held.is_pending and len(model.requests()) == 1
    assert held.arguments == {"draft": lookup.output}
    loop.advance(run.pk)  # a stray resumption holds nothing twice
    assert run.tool_calls.filter(kind=ToolCall.Kind.CHECKPOINT).count() == 1

    edited = {"draft": "Order A-1003 shipped on Monday."}
    records.toolcall_decide(
        call_id=held.pk, reviewer=reviewer, verdict="edit", shown_hash=held.review_hash, arguments=edited
    )
    loop.advance(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and len(model.requests()) == 2
    messages = model.requests()[1]["messages"]
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == held.call_id
    assert "Checked by a person: Order A-1003 shipped on Monday." in messages[-1]["content"]
    # Valid chat: each assistant message's tool calls are answered by the tool rows right after it.
    for index, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls") or []]
        following = [m.get("tool_call_id") for m in messages[index + 1 : index + 1 + len(ids)]]
        assert following == ids
