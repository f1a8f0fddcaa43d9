"""OpenAI Agents SDK example: a support agent whose issue_refund tool (`needs_approval=True`) waits for ReviewHub.

The run's RunState is stored until the decision; `resume` (a worker, any process) approves or rejects and runs
on. The SDK imports as `agents`: run this from outside a project that has an `agents` package of its own.
The model is reached through chat completions. Usage: see refunds.py."""

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from agents.tool_context import ToolContext
from openai import AsyncOpenAI

from refunds import INSTRUCTIONS, connect, options, proposed, say
from reviewhub_client.for_openai_agents import AgentsReview


def build(opts, gate, shop):
    @function_tool(needs_approval=True)
    def issue_refund(ctx: ToolContext, order_id: str, amount: float, reason: str) -> str:
        """Refund money to the customer of an order."""
        return gate.execute(ctx.tool_call_id, shop.refund, note_changes=True)

    client = AsyncOpenAI(base_url=opts.model, api_key="unused", max_retries=0)
    model = OpenAIChatCompletionsModel(model="reviewhub-demo", openai_client=client)
    return AgentsReview(Agent(name="support", instructions=INSTRUCTIONS, tools=[issue_refund], model=model), gate)


async def run(opts, review) -> None:
    if opts.command == "start":
        proposed(await review.start(opts.request))
        if not opts.wait:
            return
    say("finished", output=await review.resume())


def main() -> None:
    set_tracing_disabled(True)
    opts = options(__doc__.splitlines()[0])
    hub, gate, shop = connect(opts)
    asyncio.run(run(opts, build(opts, gate, shop)))


if __name__ == "__main__":
    main()
