"""An OpenAI Agents SDK support agent as its docs write one: `function_tool(needs_approval=True)` functions and
an Agent on chat completions, run through ReviewHub's `AgentsReview` (its RunState kept in the Store). The SDK
imports as `agents`: this runs outside the project. Usage and world: leased.py."""

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from leased import INSTRUCTIONS, connect, main, proposed
from reviewhub_client.for_openai_agents import AgentsReview


def run(command: str, thread_id: str, request: str | None) -> str:
    gate, world = connect(thread_id, request)

    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: float, reason: str) -> str:
        """Refund money to the customer of an order."""
        return world.refund(order_id, amount)

    @function_tool(needs_approval=True)
    def send_email(to: str, order_id: str, subject: str, body: str) -> str:
        """Email a customer about their order."""
        return world.send_mail(to, subject, body)

    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="unused", max_retries=0)
    model = OpenAIChatCompletionsModel(model="reviewhub-demo", openai_client=client)
    agent = Agent(name="support", instructions=INSTRUCTIONS, tools=[issue_refund, send_email], model=model)
    review = AgentsReview(agent, gate)

    async def go() -> str:
        if command == "start":
            proposed(await review.start(request))
        return await review.resume()

    return asyncio.run(go())


if __name__ == "__main__":
    set_tracing_disabled(True)
    main(run)
