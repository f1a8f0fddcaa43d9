"""LangGraph / LangChain 1.x: an agent with `HumanInTheLoopMiddleware(interrupt_on=..., interrupt_mode="per_call")`
and a persistent checkpointer. Each interrupt becomes a ReviewHub call; each decision becomes LangChain's
decision type and the graph resumes with `Command(resume=...)`, in any process that opens the same checkpointer.

    review = LangGraphReview(agent, Gate(hub, store, "support-4711", user_request=text))
    review.start(text)           # runs until the interrupts, proposes them
    final = review.resume()      # here or in another process: waits for the decisions, resumes, returns the state

Inside the gated tool, run its body through the gate so it executes once: `review.gate.execute(runtime.tool_call_id,
body)` (`runtime: ToolRuntime` is injected by LangChain)."""

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.types import Command

from .gate import Gate
from .models import Call


def to_langchain(call: Call) -> dict[str, Any]:
    """ReviewHub's decision as LangChain's: approve, edit (edited_action), reject (message) or respond (message)."""
    decision = call.decision
    if decision is None:
        raise ValueError(f"call {call.id} is not decided")
    if decision.verdict == "approve":
        return {"type": "approve"}
    if decision.verdict == "edit":
        return {"type": "edit", "edited_action": {"name": call.tool, "args": decision.arguments or {}}}
    if decision.verdict in ("respond", "answer"):  # an answer to the tool's question: the message the model reads
        return {"type": "respond", "message": decision.tool_message()}
    return {"type": "reject", "message": decision.reason or decision.tool_message()}


class LangGraphReview:
    def __init__(self, agent: Any, gate: Gate):
        self.agent, self.gate = agent, gate
        self.config = {"configurable": {"thread_id": gate.thread_id}}

    def start(self, request: str) -> list[Call]:
        """Run the agent on the user's request until it finishes or pauses; returns the calls proposed."""
        self.agent.invoke({"messages": [{"role": "user", "content": request}]}, self.config)
        return self.propose()

    def interrupts(self) -> list[Any]:
        """The checkpoint's pending tool-approval interrupts."""
        state = self.agent.get_state(self.config)
        return [i for i in state.interrupts if isinstance(i.value, dict) and i.value.get("type") == "tool_approval"]

    def propose(self) -> list[Call]:
        reasoning = self._reasoning()
        return [
            self.gate.propose(i.value["tool_call_id"], i.value["name"], i.value["args"], reasoning=reasoning)
            for i in self.interrupts()
        ]

    def resume(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Wait for every pending decision, resume, and go on until the agent finishes; returns its final state."""
        while interrupts := self.interrupts():
            self.propose()
            answers = {}
            for interrupt in interrupts:
                call = self.gate.decision(interrupt.value["tool_call_id"], timeout=timeout)
                if call.pending:
                    raise TimeoutError(f"call {call.id} is still pending")
                answers[interrupt.id] = to_langchain(call)
            self.agent.invoke(Command(resume=answers), self.config)
        return self.agent.get_state(self.config).values

    def _reasoning(self) -> str:
        messages = self.agent.get_state(self.config).values.get("messages", [])
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        return last.text if last is not None and isinstance(last.text, str) else ""
