"""LangGraph / LangChain example: a support agent whose issue_refund tool waits for a ReviewHub reviewer.

The agent has `HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True})` in its default (batched) mode,
then `ReviewHubMiddleware(gate)`, and an SQLite checkpointer, so `resume` works from any process. Set
EXAMPLE_INTERRUPT_MODE=per_call for the middleware's other mode. Usage: see refunds.py (`start THREAD REQUEST
[--wait]`, `resume THREAD`)."""

import os
import sqlite3

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver

from refunds import INSTRUCTIONS, connect, options, proposed, say
from reviewhub_client.for_langgraph import LangGraphReview, ReviewHubMiddleware


def build(opts, gate, shop):
    @tool
    def issue_refund(order_id: str, amount: float, reason: str) -> dict:
        """Refund money to the customer of an order."""
        return shop.refund(order_id, amount, reason)

    model = ChatOpenAI(model="reviewhub-demo", base_url=opts.model, api_key="unused", max_retries=0)
    saver = SqliteSaver(sqlite3.connect(opts.data / "langgraph.sqlite3", check_same_thread=False, timeout=30))
    mode = os.environ.get("EXAMPLE_INTERRUPT_MODE") or "batched"  # batched: the middleware's default
    hitl = HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True}, interrupt_mode=mode)
    middleware = [hitl, ReviewHubMiddleware(gate)]
    agent = create_agent(
        model, tools=[issue_refund], middleware=middleware, checkpointer=saver, system_prompt=INSTRUCTIONS
    )
    return LangGraphReview(agent, gate)


def main() -> None:
    opts = options(__doc__.splitlines()[0])
    hub, gate, shop = connect(opts)
    review = build(opts, gate, shop)
    if opts.command == "start":
        proposed(review.start(opts.request))
        if not opts.wait:
            return
    final = review.resume()
    say("finished", output=final["messages"][-1].text)


if __name__ == "__main__":
    main()
