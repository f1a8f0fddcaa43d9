"""OpenAI Agents SDK example: a support agent whose issue_refund tool (`needs_approval=True`) waits for ReviewHub.

The run's RunState is stored until the decision; `resume` (a worker, any process) approves or rejects and runs
on; AgentsReview runs the tool through the gate (the reviewer's arguments, once) and a failure ends the run.
The SDK imports as `agents`: run this from outside a project that has an `agents` package of its own.
The model is reached through chat completions. Usage: see refunds.py."""

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from refunds import INSTRUCTIONS, connect, options, proposed, say
from reviewhub_client.for_openai_agents import AgentsReview


def build(opts, gate, shop):
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: float, reason: str) -> dict:
        """Refund money to the customer of an order."""
        return shop.refund(order_id, amount, reason)

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
