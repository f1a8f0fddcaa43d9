"""A Pydantic AI support agent as its docs write one: `tool_plain(requires_approval=True)` functions and
`DeferredToolRequests` in the output type, run through ReviewHub's `PydanticAIReview` (its message history kept in
the Store). Usage and world: leased.py."""

import os

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from leased import INSTRUCTIONS, connect, main, proposed
from reviewhub_client.for_pydantic_ai import PydanticAIReview


def run(command: str, thread_id: str, request: str | None) -> str:
    gate, world = connect(thread_id, request)
    provider = OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key="unused")
    agent = Agent(
        OpenAIChatModel("reviewhub-demo", provider=provider),
        output_type=[str, DeferredToolRequests],
        instructions=INSTRUCTIONS,
    )

    @agent.tool_plain(requires_approval=True)
    def issue_refund(order_id: str, amount: float, reason: str) -> str:
        """Refund money to the customer of an order."""
        return world.refund(order_id, amount)

    @agent.tool_plain(requires_approval=True)
    def send_email(to: str, order_id: str, subject: str, body: str) -> str:
        """Email a customer about their order."""
        return world.send_mail(to, subject, body)

    review = PydanticAIReview(agent, gate)
    if command == "start":
        proposed(review.start(request))
    return review.resume()


if __name__ == "__main__":
    main(run)
