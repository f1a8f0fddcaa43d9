"""A LangGraph / LangChain 1.x support agent as its docs write one: `@tool` functions, `create_agent` with
`HumanInTheLoopMiddleware(interrupt_on=...)` in its default (batched) mode and an SQLite checkpointer, plus
ReviewHub's `ReviewHubMiddleware(gate)`. Usage and world: leased.py."""

import os
import sqlite3
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver

from leased import INSTRUCTIONS, connect, main, proposed
from reviewhub_client.for_langgraph import LangGraphReview, ReviewHubMiddleware


def run(command: str, thread_id: str, request: str | None) -> str:
    gate, world = connect(thread_id, request)

    @tool
    def issue_refund(order_id: str, amount: float, reason: str) -> str:
        """Refund money to the customer of an order."""
        return world.refund(order_id, amount)

    @tool
    def send_email(to: str, order_id: str, subject: str, body: str) -> str:
        """Email a customer about their order."""
        return world.send_mail(to, subject, body)

    model = ChatOpenAI(model="reviewhub-demo", base_url=os.environ["OPENAI_BASE_URL"], api_key="unused", max_retries=0)
    checkpoints = Path(os.environ["AGENT_DATA"]) / "langgraph.sqlite3"
    saver = SqliteSaver(sqlite3.connect(checkpoints, check_same_thread=False, timeout=30))
    hitl = HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True, "send_email": True})
    agent = create_agent(
        model,
        tools=[issue_refund, send_email],
        middleware=[hitl, ReviewHubMiddleware(gate)],
        checkpointer=saver,
        system_prompt=INSTRUCTIONS,
    )
    review = LangGraphReview(agent, gate)
    if command == "start":
        proposed(review.start(request))
    return review.resume()["messages"][-1].text


if __name__ == "__main__":
    main(run)
