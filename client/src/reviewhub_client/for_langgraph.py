"""LangGraph / LangChain 1.x: an agent with `HumanInTheLoopMiddleware(interrupt_on=...)`, then `ReviewHubMiddleware(
gate)`, and a persistent checkpointer. Each paused tool call becomes a ReviewHub call; each decision becomes
LangChain's decision type and the graph resumes with `Command(resume=...)`, in any process that opens the same
checkpointer. Tools are written the usual way (`@tool`, no ToolRuntime): ReviewHubMiddleware runs every reviewed
call through the gate, with the arguments ReviewHub approved, once across all the processes that resume.

    gate = Gate(hub, store, "support-4711", user_request=text)
    hitl = HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True})
    agent = create_agent(model, tools=[issue_refund], middleware=[hitl, ReviewHubMiddleware(gate)], checkpointer=...)
    review = LangGraphReview(agent, gate)
    review.start(text)           # runs until the interrupts, proposes them
    final = review.resume()      # here or in another process: waits for the decisions, resumes, returns the state

Both of the middleware's interrupt modes work: "batched" (its default: one interrupt per model turn whose value is
{"action_requests": [...], "review_configs": [...]}, without tool-call ids, answered by position) and "per_call"
(one {"type": "tool_approval", "tool_call_id": ...} interrupt per call, answered by interrupt id). Any other
interrupt raises ValueError: nothing is ever skipped silently."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from ._adapters import check_ran, execute_async, proposed
from ._api import tool_output
from .gate import Gate
from .models import Call

UNKNOWN = (
    "LangGraph interrupt {value!r} is neither HumanInTheLoopMiddleware's batched mode (a value with "
    '"action_requests") nor its per_call mode (a value with "type": "tool_approval"); ReviewHub cannot review it.'
)
FIX = "Add ReviewHubMiddleware(gate) to the agent's middleware, after HumanInTheLoopMiddleware."


def to_langchain(call: Call) -> dict[str, Any]:
    """ReviewHub's decision as LangChain's: approve, edit (edited_action), reject (message) or respond (message)."""
    decision = call.decision
    if decision is None:
        raise ValueError(f"call {call.id} is not decided")
    if decision.verdict == "approve":
        return {"type": "approve"}
    if decision.verdict == "edit":
        return {"type": "edit", "edited_action": {"name": call.tool, "args": decision.arguments or {}}}
    if decision.verdict == "answer":  # an answer to the tool's question: the message the model reads
        return {"type": "respond", "message": decision.tool_message()}
    return {"type": "reject", "message": decision.why() or decision.tool_message()}


@dataclass(frozen=True)
class Paused:
    """One tool call an interrupt paused: the framework's call id, the tool and its arguments."""

    tool_call_id: str
    name: str
    args: dict


@dataclass(frozen=True)
class Pause:
    """One interrupt of HumanInTheLoopMiddleware, in its mode ("batched" or "per_call"), and the calls it paused."""

    mode: str
    interrupt: Any
    calls: list[Paused]

    def answer(self, decisions: list[dict]) -> Any:
        """The resume value for this interrupt: one decision (per_call) or {"decisions": [...]} by position."""
        return decisions[0] if self.mode == "per_call" else {"decisions": decisions}


def pauses(interrupts: list[Any], messages: list[Any]) -> list[Pause]:
    """The checkpoint's interrupts read in either mode; ValueError for an interrupt of any other shape."""
    found = []
    for interrupt in interrupts:
        value = interrupt.value
        if isinstance(value, dict) and value.get("type") == "tool_approval":
            paused = Paused(value["tool_call_id"], value["name"], dict(value["args"]))
            found.append(Pause("per_call", interrupt, [paused]))
        elif isinstance(value, dict) and isinstance(value.get("action_requests"), list):
            found.append(Pause("batched", interrupt, batched_calls(value["action_requests"], messages)))
        else:
            raise ValueError(UNKNOWN.format(value=value))
    return found


def batched_calls(requests: list[dict], messages: list[Any]) -> list[Paused]:
    """A batched interrupt's action requests (which carry no ids) matched by name and arguments, in order, to the
    tool calls of the checkpointed AIMessage."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    unmatched = list(last.tool_calls) if last is not None else []
    calls = []
    for request in requests:
        same = (c for c in unmatched if c["name"] == request["name"] and c["args"] == request["args"])
        match = next(same, None)
        if match is None:
            raise ValueError(
                f"batched HumanInTheLoopMiddleware interrupt: no tool call of the last AI message is "
                f"{request['name']} with {request['args']!r}"
            )
        unmatched.remove(match)
        calls.append(Paused(match["id"], match["name"], dict(match["args"])))
    return calls


class ReviewHubMiddleware(AgentMiddleware):
    """Runs every tool call the gate proposed through `gate.execute`: with ReviewHub's approved arguments (the
    reviewer's edit), once across every process that resumes; other tool calls run as they are."""

    def __init__(self, gate: Gate):
        super().__init__()
        self.gate = gate

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        tool_call = request.tool_call
        if not proposed(self.gate, tool_call["id"]):
            return handler(request)
        output = self.gate.execute(tool_call["id"], lambda **args: _content(handler(_with_args(request, args))))
        return ToolMessage(content=output, name=tool_call["name"], tool_call_id=tool_call["id"])

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        tool_call = request.tool_call
        if not proposed(self.gate, tool_call["id"]):
            return await handler(request)

        async def run(**args: Any) -> str:
            return _content(await handler(_with_args(request, args)))

        output = await execute_async(self.gate, tool_call["id"], run)
        return ToolMessage(content=output, name=tool_call["name"], tool_call_id=tool_call["id"])


def _with_args(request: Any, args: dict) -> Any:
    return request.override(tool_call={**request.tool_call, "args": args})


def _content(result: Any) -> str:
    """What the tool gave the model, as the text ReviewHub records (JSON for anything but text)."""
    return tool_output(result.content if isinstance(result, ToolMessage) else result)


class LangGraphReview:
    def __init__(self, agent: Any, gate: Gate):
        self.agent, self.gate = agent, gate
        self.config = {"configurable": {"thread_id": gate.thread_id}}

    def start(self, request: str) -> list[Call]:
        """Run the agent on the user's request until it finishes or pauses; returns the calls proposed."""
        self.agent.invoke({"messages": [{"role": "user", "content": request}]}, self.config)
        return self.propose()

    def pauses(self) -> list[Pause]:
        """The checkpoint's pending HumanInTheLoopMiddleware interrupts (ValueError for any other interrupt)."""
        state = self.agent.get_state(self.config)
        return pauses(list(state.interrupts), state.values.get("messages", []))

    def propose(self) -> list[Call]:
        reasoning = self._reasoning()
        paused = [call for pause in self.pauses() for call in pause.calls]
        return [self.gate.propose(c.tool_call_id, c.name, c.args, reasoning=reasoning) for c in paused]

    def resume(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Wait for every pending decision, resume, and go on until the agent finishes; returns its final state.
        A run another process resumed first and has not finished is carried on here too (the gate runs each tool
        once). ReviewHubError if an approved call's tool ran outside the gate (ReviewHubMiddleware missing)."""
        resumed: list[str] = []
        while True:
            state = self.agent.get_state(self.config)
            found = pauses(list(state.interrupts), state.values.get("messages", []))
            if found:
                self.propose()
                answers = {p.interrupt.id: p.answer([self._decided(c, timeout) for c in p.calls]) for p in found}
                self.agent.invoke(Command(resume=answers), self.config)
                resumed += [call.tool_call_id for pause in found for call in pause.calls]
            elif state.next:
                self.agent.invoke(None, self.config)
            else:
                check_ran(self.gate, resumed, fix=FIX)  # the run finished: every approved call was claimed
                return state.values

    def _decided(self, paused: Paused, timeout: float | None) -> dict[str, Any]:
        call = self.gate.decision(paused.tool_call_id, timeout=timeout)
        if call.pending:
            raise TimeoutError(f"call {call.id} is still pending")
        return to_langchain(call)

    def _reasoning(self) -> str:
        messages = self.agent.get_state(self.config).values.get("messages", [])
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        return last.text if last is not None and isinstance(last.text, str) else ""
