"""An AG-UI agent nobody at ReviewHub wrote: a LangGraph graph served by ag-ui-langgraph, whose refund node
calls interrupt() before refunding (one interrupt per tool call, in parallel). It knows nothing of ReviewHub.

    python examples/agui/langgraph_refund.py PORT   (OPENAI_BASE_URL: the model; EXAMPLE_DATA: refunds.jsonl)

ag-ui-langgraph 0.0.47 resumes several open interrupts with one `__agui_resume_map__` value, which LangGraph
cannot hand to each interrupt(); the subclass below resumes each by its id (LangGraph's own Command form).
"""

import json
import os
import sys
from pathlib import Path

import uvicorn
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send, interrupt

DATA = Path(os.environ.get("EXAMPLE_DATA", "."))
APPROVAL = {  # the resume payload the interrupt asks for (AG-UI's approve-with-edits pattern)
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


@tool
def issue_refund(order_id: str, amount: float, reason: str) -> str:
    """Refund money to the customer of an order."""
    with open(DATA / "refunds.jsonl", "a") as out:
        out.write(json.dumps({"order_id": order_id, "amount": amount, "reason": reason}) + "\n")
    return f"Refunded ${amount:.2f} on {order_id}."


model = ChatOpenAI(model="reviewhub-demo", api_key="unused", max_retries=0).bind_tools([issue_refund])


def call_model(state: MessagesState):
    prompt = SystemMessage("You are a support agent. Use issue_refund to refund customers.")
    return {"messages": [model.invoke([prompt, *state["messages"]])]}


def calls(state: MessagesState):
    last = state["messages"][-1]
    return [Send("refund", {"call": call}) for call in last.tool_calls] or END


def refund(state: dict):
    call = state["call"]
    message = f"Refund {call['args'].get('amount')} on {call['args'].get('order_id')}?"
    asked = {"reason": "tool_call", "toolCallId": call["id"], "message": message, "responseSchema": APPROVAL}
    answer = interrupt(asked) or {}  # None when the interrupt was cancelled
    if answer.get("approved"):
        output = issue_refund.invoke(answer.get("editedArgs") or call["args"])
    else:
        output = f"The reviewer rejected this refund: {answer.get('reason')}"
    return {"messages": [ToolMessage(output, tool_call_id=call["id"])]}


graph = StateGraph(MessagesState)
graph.add_node("model", call_model)
graph.add_node("refund", refund)
graph.add_edge(START, "model")
graph.add_conditional_edges("model", calls, ["refund", END])
graph.add_edge("refund", "model")


class PerInterruptResume(LangGraphAgent):
    def _build_command_from_agui_resume(self, entries, *, open_interrupts=None):
        return Command(resume={e.interrupt_id: e.payload for e in entries})


app = FastAPI()
agent = PerInterruptResume(name="refunds", graph=graph.compile(checkpointer=MemorySaver()), emit_interrupt_outcome=True)
add_langgraph_fastapi_endpoint(app, agent, "/")

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
