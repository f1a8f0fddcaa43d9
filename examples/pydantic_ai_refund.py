"""Pydantic AI example: a support agent whose issue_refund tool (`requires_approval=True`) waits for ReviewHub.

The run ends with DeferredToolRequests; its message history is stored; `resume` (any process) runs on with the
decisions as DeferredToolResults; PydanticAIReview runs the tool through the gate (the reviewer's arguments,
once). Usage: see refunds.py."""

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from refunds import INSTRUCTIONS, connect, options, proposed, say
from reviewhub_client.for_pydantic_ai import PydanticAIReview


def build(opts, gate, shop):
    model = OpenAIChatModel("reviewhub-demo", provider=OpenAIProvider(base_url=opts.model, api_key="unused"))
    agent = Agent(model, output_type=[str, DeferredToolRequests], instructions=INSTRUCTIONS)

    @agent.tool_plain(requires_approval=True)
    def issue_refund(order_id: str, amount: float, reason: str) -> dict:
        """Refund money to the customer of an order."""
        return shop.refund(order_id, amount, reason)

    return PydanticAIReview(agent, gate)


def main() -> None:
    opts = options(__doc__.splitlines()[0])
    hub, gate, shop = connect(opts)
    review = build(opts, gate, shop)
    if opts.command == "start":
        proposed(review.start(opts.request))
        if not opts.wait:
            return
    say("finished", output=review.resume())


if __name__ == "__main__":
    main()
