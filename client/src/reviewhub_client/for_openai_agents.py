"""OpenAI Agents SDK: tools with `function_tool(needs_approval=True)`, written the usual way. A run's
`interruptions` become ReviewHub calls, the serialized `RunState` is kept in the Store until the decisions, then
each item is approved or rejected and the run resumed, by whichever process (a worker) calls `resume`.

The SDK imports as `agents`: run this in a process whose working directory and sys.path do not hold a project
that has an `agents` package of its own.

    review = AgentsReview(agent, Gate(hub, store, "support-4711", user_request=text))
    await review.start(text)      # runs until the interruptions, stores the RunState, proposes them
    final = await review.resume()  # here or in a worker: waits for the decisions, resumes, returns final_output

AgentsReview runs the agent with its approval tools wrapped (`gated_agent`): an approved call runs through the
gate, with the arguments ReviewHub approved (the SDK itself cannot run edited arguments; the model is told what
the reviewer changed), once across processes. Gate failures (and the tool's own errors) end the run with the
error (`failure_error_function=None`): the model is never told "An error occurred ... Please try again." after a
refund that may have happened. The SDK wraps what a tool raises in its own UserError; AgentsReview raises the
gate's own error instead (OutcomeUnknown, NotApproved, ToolFailed), as the other adapters do, so that
`except OutcomeUnknown:` works around `start` and `resume`."""

import asyncio
import copy
import json
from typing import Any

from agents import Agent, FunctionTool, Runner, RunState
from agents.tool import set_function_tool_failure_error_function
from agents.tool_context import ToolContext

from ._adapters import check_ran, execute_async
from .errors import ReviewHubError
from .gate import Gate
from .models import Call

FIX = "Run the agent through AgentsReview (which wraps its approval tools), not the bare agent."


def _arguments(item: Any) -> dict:
    raw = item.arguments
    return json.loads(raw) if isinstance(raw, str) and raw else dict(raw or {})


def gated_tool(tool: FunctionTool, gate: Gate) -> FunctionTool:
    """The tool with its body run through `gate.execute` (the approved arguments, once), failing loud."""
    inner = set_function_tool_failure_error_function(copy.copy(tool), None)  # the body's errors reach the gate

    async def invoke(ctx: ToolContext, _arguments_from_model: str) -> Any:
        async def run(**arguments: Any) -> Any:
            return await inner.on_invoke_tool(ctx, json.dumps(arguments))

        return await execute_async(gate, ctx.tool_call_id, run, note_changes=True)

    gated = copy.copy(tool)
    gated.on_invoke_tool = invoke
    return set_function_tool_failure_error_function(gated, None)


def gated_agent(agent: Agent, gate: Gate) -> Agent:
    """A clone of the agent whose approval tools (`needs_approval` set) run through the gate."""
    tools = [
        gated_tool(tool, gate) if isinstance(tool, FunctionTool) and tool.needs_approval is not False else tool
        for tool in agent.tools
    ]
    return agent.clone(tools=tools)


class AgentsReview:
    def __init__(self, agent: Any, gate: Gate, *, max_turns: int = 10):
        self.agent, self.gate, self.max_turns = gated_agent(agent, gate), gate, max_turns

    async def start(self, request: str) -> list[Call]:
        """Run on the user's request until it finishes or is interrupted; returns the calls proposed."""
        return await self._after(await self._run(request))

    async def _run(self, given: Any) -> Any:
        """Runner.run on a request or a RunState; the gate's own error if the SDK wrapped one."""
        try:
            return await Runner.run(self.agent, given, max_turns=self.max_turns)
        except Exception as exc:
            gate_error = _gate_error(exc)
            if gate_error is None:
                raise
            raise gate_error from None

    async def _after(self, result: Any) -> list[Call]:
        if not result.interruptions:
            self.gate.store.save_state(self.gate.thread_id, json.dumps({"final_output": str(result.final_output)}))
            return []
        self.gate.store.save_state(self.gate.thread_id, result.to_state().to_string())
        reasoning = _reasoning(result)
        return [
            await asyncio.to_thread(self.gate.propose, item.call_id, item.name, _arguments(item), reasoning=reasoning)
            for item in result.interruptions
        ]

    async def resume(self, *, timeout: float | None = None) -> str:
        """Wait for the decisions of the stored RunState's interruptions, approve or reject each, run on; repeat
        until the run finishes. Returns the final output."""
        while True:
            saved = self.gate.store.state(self.gate.thread_id)
            if saved is None:
                raise LookupError(f"no stored run for thread {self.gate.thread_id}")
            if saved.startswith('{"final_output"'):
                return json.loads(saved)["final_output"]
            state = await RunState.from_string(self.agent, saved)
            items = state.get_interruptions()
            for item in items:
                await self._decide(state, item, timeout)
            await self._after(await self._run(state))
            await asyncio.to_thread(check_ran, self.gate, [item.call_id for item in items], fix=FIX)

    async def _decide(self, state: Any, item: Any, timeout: float | None) -> None:
        """Approve or reject the interruption as the reviewer decided (proposing it first if it never was)."""
        await asyncio.to_thread(self.gate.propose, item.call_id, item.name, _arguments(item))
        call = await asyncio.to_thread(self.gate.decision, item.call_id, timeout=timeout)
        if call.pending:
            raise TimeoutError(f"call {call.id} is still pending")
        if call.decision.approved:
            state.approve(item)
        else:
            state.reject(item, rejection_message=call.decision.tool_message())


def _gate_error(exc: BaseException) -> ReviewHubError | None:
    """The ReviewHub error a tool raised, where the SDK wrapped it (`UserError(...) from` it)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ReviewHubError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__
    return None


def _reasoning(result: Any) -> str:
    """The model's text of its last turn (the SDK keeps it in the run's new items)."""
    texts = []
    for item in getattr(result, "new_items", []):
        if getattr(item, "type", "") == "message_output_item":
            from agents import ItemHelpers

            texts.append(ItemHelpers.text_message_output(item))
    return texts[-1] if texts else ""
