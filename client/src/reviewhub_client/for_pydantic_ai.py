"""Pydantic AI: tools with `requires_approval=True` (written the usual way, `tool_plain` or `tool`) and
`DeferredToolRequests` in the agent's output type. The run's deferred approvals become ReviewHub calls; its message
history is kept in the Store; the decisions come back as `DeferredToolResults` (approved, approved with the
reviewer's arguments, `ToolDenied(reason and guidance)`) and the run goes on in whichever process calls `resume`.

    review = PydanticAIReview(agent, Gate(hub, store, "support-4711", user_request=text))
    review.start(text)            # runs until the deferred calls, stores the history, proposes them
    final = review.resume()       # here or in another process

Each run gets the `ReviewHubGate` capability, whose `GatedToolset` runs every call ReviewHub was asked about
through `gate.execute`: with the approved arguments, once across processes. Nothing changes in the tools."""

import json
from dataclasses import dataclass
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ModelMessagesTypeAdapter, ToolApproved, ToolDenied
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset

from ._adapters import check_ran, execute_async, proposed
from .gate import Gate
from .models import Call

FIX = "Run the agent through PydanticAIReview, or give it the ReviewHubGate(gate) capability."


def to_pydantic_ai(call: Call) -> ToolApproved | ToolDenied:
    """ReviewHub's decision as Pydantic AI's: approved (with the edited arguments, if any) or denied with why."""
    decision = call.decision
    if decision is None:
        raise ValueError(f"call {call.id} is not decided")
    if decision.verdict == "edit":
        return ToolApproved(override_args=decision.arguments)
    if decision.approved:
        return ToolApproved()
    return ToolDenied(decision.tool_message())


@dataclass
class GatedToolset(WrapperToolset):
    """Runs each tool call ReviewHub was asked about through `gate.execute` (the approved arguments, once across
    processes); any other call runs as it is."""

    gate: Gate

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        if not proposed(self.gate, ctx.tool_call_id):
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)

        async def run(**arguments: Any) -> Any:
            return await self.wrapped.call_tool(name, arguments, ctx, tool)

        return await execute_async(self.gate, ctx.tool_call_id, run)


@dataclass
class ReviewHubGate(AbstractCapability):
    """The capability that wraps a run's toolset in a GatedToolset."""

    gate: Gate

    def get_wrapper_toolset(self, toolset: AbstractToolset) -> AbstractToolset:
        return GatedToolset(toolset, gate=self.gate)


class PydanticAIReview:
    def __init__(self, agent: Any, gate: Gate):
        self.agent, self.gate = agent, gate
        self.capabilities = [ReviewHubGate(gate)]

    def start(self, request: str) -> list[Call]:
        return self._after(self.agent.run_sync(request, capabilities=self.capabilities))

    def _after(self, result: Any) -> list[Call]:
        messages = json.loads(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
        if not isinstance(result.output, DeferredToolRequests):
            self.gate.store.save_state(self.gate.thread_id, {"messages": messages, "final_output": str(result.output)})
            return []
        pending = [part.tool_call_id for part in result.output.approvals]
        self.gate.store.save_state(self.gate.thread_id, {"messages": messages, "pending": pending})
        reasoning = _reasoning(result.all_messages())
        return [
            self.gate.propose(part.tool_call_id, part.tool_name, part.args_as_dict(), reasoning=reasoning)
            for part in result.output.approvals
        ]

    def resume(self, *, timeout: float | None = None) -> str:
        """Wait for the decisions of the stored deferred calls, run on with them until the run finishes."""
        while True:
            saved = self.gate.store.state(self.gate.thread_id)
            if saved is None:
                raise LookupError(f"no stored run for thread {self.gate.thread_id}")
            state = json.loads(saved)
            if "final_output" in state:
                return state["final_output"]
            results = DeferredToolResults()
            for tool_call_id in state["pending"]:
                call = self.gate.decision(tool_call_id, timeout=timeout)
                if call.pending:
                    raise TimeoutError(f"call {call.id} is still pending")
                results.approvals[tool_call_id] = to_pydantic_ai(call)
            history = ModelMessagesTypeAdapter.validate_python(state["messages"])
            run = self.agent.run_sync(
                message_history=history, deferred_tool_results=results, capabilities=self.capabilities
            )
            self._after(run)
            check_ran(self.gate, state["pending"], fix=FIX)


def _reasoning(messages: list[Any]) -> str:
    response = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    parts = response.parts if response is not None else []
    return "\n".join(part.content for part in parts if isinstance(part, TextPart))
