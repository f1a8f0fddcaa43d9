"""LangGraph + PostgresSaver in the shapes of ReviewHub's loop and resume benchmarks; prints one JSON object.

Run by bench/sidebyside.py with the bench virtualenv's Python (bench/requirements.txt):

    .venv-bench/bin/python bench/peers/langgraph_bench.py DATABASE_URL STEPS HISTORIES SAMPLES

Loop: a ReAct graph (model node, tool node) whose stub model asks for one
get_order_status per turn; every super-step is checkpointed to PostgreSQL before the
next starts (durability="sync", as ReviewHub commits each step; LangGraph's default,
"async", writes checkpoints in the background while the graph goes on).
Resume: the graph stops before its tool node (interrupt_before, a person's approval),
and is resumed from the checkpoint in a warm process; measured from the resume call
to the tool body's first line, with HISTORIES transcript messages before the call.
"""

import json
import sys
import time
import uuid

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from psycopg_pool import ConnectionPool
from walbytes import Turns, Wal, latency

ORDER = {"status": "delivered", "items": "Kettle (1)", "total": "49.00", "refunded": "0.00"}
body_started: list[float] = []
DURABILITY = "sync"


@tool
def get_order_status(order_id: str) -> str:
    """Get an order's status, items, total and what was refunded."""
    body_started.append(time.perf_counter())
    return json.dumps(ORDER | {"order_id": order_id})


def build(saver, steps: int, turns: Turns | None = None, interrupt: bool = False):
    def model(state: MessagesState):
        if turns is not None:
            turns.mark()
        turn = sum(1 for m in state["messages"] if isinstance(m, AIMessage)) + 1
        if turn > steps:
            return {"messages": [AIMessage(content="All done.")]}
        call = {"name": "get_order_status", "args": {"order_id": "A-1002"}, "id": f"call_{turn}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([get_order_status]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=saver, interrupt_before=["tools"] if interrupt else None)


def config(steps: int) -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 2 * steps + 10}


def run_loop(saver, wal: Wal, steps: int) -> dict:
    turns = Turns(wal)
    graph = build(saver, steps, turns)
    graph.invoke({"messages": [("user", "Where is order A-1002?")]}, config(steps), durability=DURABILITY)
    return turns.summary()


def resume_once(saver, history: int) -> float:
    """Build a thread with `history` messages before a call that waits, then resume it: ms to the tool body."""
    steps = (history - 2) // 2 + 1
    graph, cfg = build(saver, steps + 1, interrupt=True), config(steps + 1)
    graph.invoke({"messages": [("user", "Where is order A-1002?")]}, cfg, durability=DURABILITY)
    for _ in range(steps - 1):  # approve and run the earlier calls, each stopping before the next
        graph.invoke(None, cfg, durability=DURABILITY)
    body_started.clear()
    started = time.perf_counter()
    graph.invoke(None, cfg, durability=DURABILITY)
    return (body_started[0] - started) * 1000


def main():
    url, steps = sys.argv[1], int(sys.argv[2])
    histories, samples = [int(h) for h in sys.argv[3].split(",")], int(sys.argv[4])
    with ConnectionPool(url, kwargs={"autocommit": True, "prepare_threshold": 0}, min_size=1, max_size=2) as pool:
        saver = PostgresSaver(pool)
        saver.setup()
        wal = Wal(url)
        loop = run_loop(saver, wal, steps) if steps else None
        resume = {str(h): latency([resume_once(saver, h) for _ in range(samples)]) for h in histories if samples}
    print(json.dumps({"loop": loop, "resume": resume}))


if __name__ == "__main__":
    main()
