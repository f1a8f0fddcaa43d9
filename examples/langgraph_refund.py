"""LangGraph / LangChain example: a support agent whose issue_refund tool waits for a ReviewHub reviewer.

The agent has `HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True})` and an SQLite checkpointer, so
`resume` works from any process. Usage: see refunds.py (`start THREAD REQUEST [--wait]`, `resume THREAD`)."""

import sqlite3

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.tools import ToolRuntime, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver

from refunds import INSTRUCTIONS, connect, options, proposed, say
from reviewhub_client.for_langgraph import LangGraphReview


def build(opts, gate, shop):
    @tool
    def issue_refund(order_id: str, amount: float, reason: str, runtime: ToolRuntime) -> str:
        """Refund money to the customer of an order."""
        return gate.execute(runtime.tool_call_id, shop.refund)

    model = ChatOpenAI(model="reviewhub-demo", base_url=opts.model, api_key="unused", max_retries=0)
    saver = SqliteSaver(sqlite3.connect(opts.data / "langgraph.sqlite3", check_same_thread=False, timeout=30))
    hitl = HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True}, interrupt_mode="per_call")
    agent = create_agent(model, tools=[issue_refund], middleware=[hitl], checkpointer=saver, system_prompt=INSTRUCTIONS)
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
