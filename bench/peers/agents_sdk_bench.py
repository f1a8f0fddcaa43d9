"""The OpenAI Agents SDK in the shapes of ReviewHub's loop and resume benchmarks; prints one JSON object.

The SDK is imported as `agents`, the name of ReviewHub's own app, so bench/sidebyside.py runs
this file with the bench virtualenv's Python and this directory as its working directory,
never with the project root on sys.path:

    .venv-bench/bin/python bench/peers/agents_sdk_bench.py DATABASE_URL STEPS HISTORIES SAMPLES

Loop: Runner.run with a stub model asking for one get_order_status per turn. The SDK keeps
the run in memory between turns; nothing is written per step (its figure is what an
in-memory loop costs, not a durable one).
Resume: the last call needs approval (needs_approval=True); the run's RunState is
serialised (to_string) into a PostgreSQL table; a warm process reads it back
(RunState.from_string), approves the call and runs on; measured from reading the
state to the tool body's first line, with HISTORIES transcript items before the call.
"""

import asyncio
import json
import sys
import time
import uuid

import psycopg
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from walbytes import Turns, Wal, latency

from agents import Agent, RunConfig, Runner, RunState, function_tool

ORDER = {"status": "delivered", "items": "Kettle (1)", "total": "49.00", "refunded": "0.00"}
body_started: list[float] = []
CONFIG = RunConfig(tracing_disabled=True)


@function_tool
def get_order_status(order_id: str) -> str:
    """Get an order's status, items, total and what was refunded."""
    return json.dumps(ORDER | {"order_id": order_id})


@function_tool(needs_approval=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Refund money to the customer of an order."""
    body_started.append(time.perf_counter())
    return f"Refunded {amount} on {order_id}"


class Stub(Model):
    """get_order_status for `lookups` turns, then (with `refund`) one issue_refund, then a text answer."""

    def __init__(self, lookups: int, refund: bool = False, turns: Turns | None = None):
        self.lookups, self.refund, self.turns = lookups, refund, turns

    async def get_response(self, system_instructions, input, *args, **kwargs):
        if self.turns is not None:
            self.turns.mark()
        done = sum(1 for item in input if isinstance(item, dict) and item.get("type") == "function_call")
        if done < self.lookups or (self.refund and done == self.lookups):
            name, arguments = ("get_order_status", '{"order_id": "A-1002"}')
            if done == self.lookups:
                name, arguments = "issue_refund", '{"order_id": "A-1002", "amount": 35}'
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{done}", name=name, arguments=arguments, id=f"fc_{done}"
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="All done.", annotations=[])
        message = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise RuntimeError("the benchmark runs the SDK without streaming; its stub model has no stream")


def agent(model: Model) -> Agent:
    return Agent(name="support", instructions="Help.", model=model, tools=[get_order_status, issue_refund])


async def run_loop(wal: Wal, steps: int) -> dict:
    turns = Turns(wal)
    await Runner.run(agent(Stub(steps, turns=turns)), "Where is order A-1002?", max_turns=steps + 2, run_config=CONFIG)
    return turns.summary()


async def resume_once(conn, history: int) -> float:
    lookups = (history - 1) // 2
    model = Stub(lookups, refund=True)
    first = await Runner.run(agent(model), "Refund order A-1002.", max_turns=lookups + 3, run_config=CONFIG)
    key = str(uuid.uuid4())
    conn.execute("insert into bench_run_states (id, state) values (%s, %s)", [key, first.to_state().to_string()])
    body_started.clear()
    started = time.perf_counter()
    stored = conn.execute("select state from bench_run_states where id = %s", [key]).fetchone()[0]
    state = await RunState.from_string(agent(model), stored)
    for item in state.get_interruptions():
        state.approve(item)
    await Runner.run(agent(model), state, max_turns=lookups + 3, run_config=CONFIG)
    return (body_started[0] - started) * 1000


async def main():
    url, steps = sys.argv[1], int(sys.argv[2])
    histories, samples = [int(h) for h in sys.argv[3].split(",")], int(sys.argv[4])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table if not exists bench_run_states (id text primary key, state text not null)")
        loop = await run_loop(Wal(url), steps) if steps else None
        resume = {str(h): latency([await resume_once(conn, h) for _ in range(samples)]) for h in histories if samples}
    print(json.dumps({"loop": loop, "resume": resume}))


if __name__ == "__main__":
    asyncio.run(main())
