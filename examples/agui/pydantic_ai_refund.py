"""An AG-UI agent nobody at ReviewHub wrote: a Pydantic AI agent served by its own AG-UI adapter, whose refund
tool requires approval (the run ends with the interrupt; the resume carries the approval). It knows nothing of
ReviewHub and keeps no state: the history comes back in each RunAgentInput.

    python examples/agui/pydantic_ai_refund.py PORT   (OPENAI_BASE_URL: the model; EXAMPLE_DATA: refunds.jsonl)
"""

import json
import os
import sys
from pathlib import Path

import uvicorn
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

DATA = Path(os.environ.get("EXAMPLE_DATA", "."))
model = OpenAIChatModel("reviewhub-demo", provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key="x"))
agent = Agent(model, output_type=[str, DeferredToolRequests], instructions="You are a support agent.")


@agent.tool_plain(requires_approval=True)
def issue_refund(order_id: str, amount: float, reason: str) -> str:
    """Refund money to the customer of an order."""
    with open(DATA / "refunds.jsonl", "a") as out:
        out.write(json.dumps({"order_id": order_id, "amount": amount, "reason": reason}) + "\n")
    return f"Refunded ${amount:.2f} on {order_id}."


async def run(request: Request):
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/", run, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
