"""ReviewHub's own tools offered to an AG-UI agent as client tools: the agent's model may call them, its run
ends with the call, and ReviewHub, the client, gates the call as it gates its own agent's and runs it.

The tools go into RunAgentInput.tools (name, description, the JSON schema of the args_model); forbidden tools
and checkpoints never do. A call of one of them that a stream ends with, without a result (the run's
pendingToolCallIds, or else the calls of this stream that have none), is a proposal of that registered tool
(approvals' gate: policy, facts, description, the card), a ClientCall of its exchange. Approved, it is executed
here like the local runtime's calls (toolcall_execute: claim, lease, idempotency key); once every one has its
output (a result, the reviewer's reason, an error), the next input carries each output as a tool message.
"""

from ag_ui.core import Tool as AguiTool
from ag_ui.core import ToolMessage

from approvals import services
from approvals.models import Decision, Run, Tier, ToolCall
from approvals.tools import CHECKPOINT, Tool, registry
from remote.declared import resolve_tools as declared_resolve_tools
from remote.declared import tool_for_call as declared_tool_for_call

from .conversation import Conversation, Seen
from .models import AguiAgent, ClientCall, Exchange


def offerable() -> list[Tool]:
    """The registered tools an AG-UI agent may be offered: never a forbidden one, never a checkpoint."""
    return [tool for tool in registry.all() if tool.tier != Tier.FORBIDDEN and tool.kind != CHECKPOINT]


def offered(agent: AguiAgent) -> list[Tool]:
    """The tools this agent is offered now, in the admin's order (a name no longer offerable is left out)."""
    tools = {tool.name: tool for tool in offerable()}
    return [tools[name] for name in agent.offered_tools if name in tools]


def specs(agent: AguiAgent) -> list[AguiTool]:
    """RunAgentInput.tools: each offered tool as the model would see it from ReviewHub's own agent."""
    return [AguiTool(name=t.name, description=t.description, parameters=_parameters(t)) for t in offered(agent)]


def _parameters(tool: Tool) -> dict:
    return tool.openai_spec()["function"]["parameters"]


def tool_for_call(call):
    """The tool of an AG-UI run's call (approvals' registry source): one of ReviewHub's tools while it is offered to
    the agent (its calls are named as the registry names it), else the agent's declaration (named agent.tool)."""
    if "." in call.tool_name:
        return declared_tool_for_call(call)
    agent = AguiAgent.objects.filter(name=call.run.agent).only("offered_tools").first()
    if agent is None or call.tool_name not in agent.offered_tools:
        return None
    return next((tool for tool in offered(agent) if tool.name == call.tool_name), None)


def resolve_tools(calls: list) -> None:
    """tool_for_call() for many calls at once, where one query does it: the calls of its declarations (named
    agent.tool); those of the tools ReviewHub offered stay to tool_for_call()."""
    declared_resolve_tools([call for call in calls if "." in call.tool_name])


def runs_here(call) -> bool:
    """Whether ReviewHub executes this call of an AG-UI run: a call of a tool it offered, never an interrupt's."""
    return call.pk is not None and ClientCall.objects.filter(tool_call_id=call.pk).exists()


def pending(exchange: Exchange, seen: Conversation) -> list[Seen]:
    """The calls of offered tools this stream left for the client: those RUN_FINISHED names as pending, or, when it
    names none, this stream's calls of the offered tools that have no result; never a call an interrupt names."""
    names = {tool["name"] for tool in exchange.input.get("tools") or []}
    interrupted = seen.interrupted_call_ids()
    results = seen.results()
    if seen.pending_ids:
        calls = [seen.tool_call(call_id) or Seen(call_id, "", "") for call_id in seen.pending_ids]
    else:
        calls = [
            seen.tool_call(call.id) or call
            for call in seen.calls.values()
            if call.name in names and call.result is None and call.id not in results
        ]
    return [call for call in calls if call.id not in interrupted]


def proposal(call: Seen) -> services.ProposedCall:
    return services.ProposedCall(call.id, call.name, call.arguments or "{}")


def calls_execute(*, run_id: int) -> None:
    """Run the run's approved calls of offered tools, each once (toolcall_execute's claim), in the order proposed."""
    runnable = services.runnable_calls(run_id=run_id, run__status__in=Run.ACTIVE, agui_client_call__isnull=False)
    for call in runnable.order_by("pk"):
        services.toolcall_execute(call=call, loaded=True)


def _content(call: ToolCall) -> str:
    """What the agent's model reads: the call's output, and after a rejection the reviewer's guidance too."""
    decision = call.final_decision()
    if decision is not None and decision.verdict == Decision.Verdict.REJECT and decision.guidance:
        return f"{call.output}\nGuidance from the reviewer: {decision.guidance}"
    return call.output


def results(exchange: Exchange) -> list[ToolMessage] | None:
    """A tool message per call of this exchange's offered tools, once every one has its output (else None)."""
    calls = [row.tool_call for row in exchange.client_calls.select_related("tool_call__run").order_by("pk")]
    if any(not call.output_recorded for call in calls):
        return None
    return [
        ToolMessage(id=f"result-{call.call_id}", role="tool", content=_content(call), tool_call_id=call.call_id)
        for call in calls
    ]
