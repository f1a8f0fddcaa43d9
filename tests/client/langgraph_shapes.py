"""Run as its own process (outside the project's sys.path, as the framework tests run the examples): how the
LangGraph adapter reads interrupts. Prints one JSON object:

- "unknown": what LangGraphReview.start raised for a graph whose node raises an interrupt of its own shape;
- "batched": the tool-call ids a batched HumanInTheLoopMiddleware interrupt (which carries none) was matched to,
  by name and arguments, from the AIMessage's tool calls;
- "unmatched": what a batched interrupt naming a call the AIMessage does not hold raised."""

import json
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Interrupt, interrupt
from reviewhub_client import Gate, Store
from reviewhub_client.for_langgraph import LangGraphReview, pauses


class State(TypedDict):
    messages: list


def ask_something(state: State) -> dict:
    interrupt({"question": "Which order?"})
    return {}


def unknown_interrupt(folder: Path) -> str:
    graph = StateGraph(State)
    graph.add_node("ask", ask_something)
    graph.add_edge(START, "ask")
    review = LangGraphReview(graph.compile(checkpointer=InMemorySaver()), Gate(None, Store(folder / "s"), "t-1"))
    try:
        review.start("Refund order A-1001.")
    except ValueError as exc:
        return f"ValueError: {exc}"
    return "nothing raised"


def batched() -> tuple[list[str], str]:
    calls = [
        {"name": "issue_refund", "args": {"order_id": "A-1001", "amount": 49}, "id": "call_a"},
        {"name": "lookup", "args": {"order_id": "A-1001"}, "id": "call_b"},
        {"name": "issue_refund", "args": {"order_id": "A-1002", "amount": 5}, "id": "call_c"},
    ]
    messages = [AIMessage(content="", tool_calls=calls)]
    requests = [{"name": c["name"], "args": c["args"], "description": ""} for c in (calls[2], calls[0])]
    value = {"action_requests": requests, "review_configs": []}
    [pause] = pauses([Interrupt(value=value, id="i-1")], messages)
    missing = {"action_requests": [{"name": "issue_refund", "args": {"amount": 1}}], "review_configs": []}
    try:
        pauses([Interrupt(value=missing, id="i-2")], messages)
        unmatched = "nothing raised"
    except ValueError as exc:
        unmatched = f"ValueError: {exc}"
    return [call.tool_call_id for call in pause.calls], unmatched


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        unknown = unknown_interrupt(Path(folder))
    ids, unmatched = batched()
    print(json.dumps({"unknown": unknown, "batched": ids, "unmatched": unmatched}))


if __name__ == "__main__":
    sys.exit(main())
