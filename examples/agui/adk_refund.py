"""An AG-UI agent nobody at ReviewHub wrote: a Google ADK agent served by ag-ui-adk, whose refund tool asks for
ADK's tool confirmation (tool_context.request_confirmation) before refunding; ag-ui-adk ends the run with an
interrupt and maps the resume entry onto the ToolConfirmation the tool reads when ADK runs it again. The model
is reached through ADK's OpenAILlm (any OpenAI-compatible endpoint). It knows nothing of ReviewHub. The App is
resumable (ADK's ResumabilityConfig, which ag-ui-adk asks for human-in-the-loop); its sessions are in memory,
so the resume must reach the same process.

    python examples/agui/adk_refund.py PORT   (OPENAI_BASE_URL: the model; EXAMPLE_DATA: refunds.jsonl)
"""

import json
import os
import sys
from pathlib import Path

import uvicorn
from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.integrations.openai import OpenAILlm
from google.adk.tools import ToolContext

DATA = Path(os.environ.get("EXAMPLE_DATA", "."))


def issue_refund(order_id: str, amount: float, reason: str, tool_context: ToolContext) -> str:
    """Refund money to the customer of an order."""
    answer = tool_context.tool_confirmation  # None the first time: ask, and ADK pauses the run
    if answer is None:
        tool_context.request_confirmation(hint=f"Refund {amount} on {order_id}?")
        tool_context.actions.skip_summarization = True
        return "Waiting for approval."
    decision = answer.payload or {}  # what the person answered: approved, editedArgs, reason
    if not answer.confirmed:
        return f"The reviewer rejected this refund: {decision.get('reason')}"
    args = {"order_id": order_id, "amount": amount, "reason": reason} | (decision.get("editedArgs") or {})
    with open(DATA / "refunds.jsonl", "a") as out:
        out.write(json.dumps(args) + "\n")
    return f"Refunded ${args['amount']:.2f} on {args['order_id']}."


model = OpenAILlm(model="reviewhub-demo", base_url=os.environ["OPENAI_BASE_URL"], api_key="unused")
root = LlmAgent(name="refunds", model=model, instruction="You are a support agent.", tools=[issue_refund])

shop = App(name="shop", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))

app = FastAPI()
add_adk_fastapi_endpoint(app, ADKAgent.from_app(shop, emit_interrupt_outcome=True), "/")

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
