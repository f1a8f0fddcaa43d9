"""An AG-UI agent with no tools and no interrupts of its own, which knows nothing of review: a Pydantic AI agent served
by its own AG-UI adapter. The adapter makes the client's tools (RunAgentInput.tools) tools of the run ("frontend
tools"): a call of one ends the run, and the client sends the result in the next input. ReviewHub is that client, so
the calls of the tools it offers are reviewed there and run there once approved.

    python examples/agui/pydantic_ai_client_tools.py PORT   (OPENAI_BASE_URL: the model)
"""

import os
import sys

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

model = OpenAIChatModel("reviewhub-demo", provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key="x"))
agent = Agent(model, instructions="You help the shop's customers with the tools the client offers you.")


async def run(request: Request):
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/", run, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
