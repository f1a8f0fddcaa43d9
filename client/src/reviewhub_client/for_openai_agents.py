"""OpenAI Agents SDK: tools with `function_tool(needs_approval=True)`. A run's `interruptions` become ReviewHub
calls, the serialized `RunState` is kept in the Store until the decisions, then each item is approved or rejected
and the run resumed, by whichever process (a worker) calls `resume`.

The SDK imports as `agents`: run this in a process whose working directory and sys.path do not hold a project
that has an `agents` package of its own.

    review = AgentsReview(agent, Gate(hub, store, "support-4711", user_request=text))
    await review.start(text)      # runs until the interruptions, stores the RunState, proposes them
    final = await review.resume()  # here or in a worker: waits for the decisions, resumes, returns final_output

The SDK cannot run a tool with edited arguments; the gate does: inside the tool, `review.gate.execute(
ctx.tool_call_id, body, note_changes=True)` runs the body with the approved arguments and tells the model."""

import asyncio
import json
from typing import Any

from agents import Runner, RunState

from .gate import Gate
from .models import Call


def _arguments(item: Any) -> dict:
    raw = item.arguments
    return json.loads(raw) if isinstance(raw, str) and raw else dict(raw or {})


class AgentsReview:
    def __init__(self, agent: Any, gate: Gate, *, max_turns: int = 10):
        self.agent, self.gate, self.max_turns = agent, gate, max_turns

    async def start(self, request: str) -> list[Call]:
        """Run on the user's request until it finishes or is interrupted; returns the calls proposed."""
        return await self._after(await Runner.run(self.agent, request, max_turns=self.max_turns))

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
            for item in state.get_interruptions():
                await asyncio.to_thread(self.gate.propose, item.call_id, item.name, _arguments(item))
                call = await asyncio.to_thread(self.gate.decision, item.call_id, timeout=timeout)
                if call.pending:
                    raise TimeoutError(f"call {call.id} is still pending")
                if call.decision.approved:
                    state.approve(item)
                else:
                    state.reject(item, rejection_message=call.decision.tool_message())
            await self._after(await Runner.run(self.agent, state, max_turns=self.max_turns))


def _reasoning(result: Any) -> str:
    """The model's text of its last turn (the SDK keeps it in the run's new items)."""
    texts = []
    for item in getattr(result, "new_items", []):
        if getattr(item, "type", "") == "message_output_item":
            from agents import ItemHelpers

            texts.append(ItemHelpers.text_message_output(item))
    return texts[-1] if texts else ""
