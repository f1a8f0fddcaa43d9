"""ReviewHub's agent loop with a stub model: time, SQL statements and WAL per step, flat or growing with history.

    .venv/bin/python bench/loop.py                 # 200 steps, PostgreSQL database reviewhub_bench_loop
    .venv/bin/python bench/loop.py --steps 50 --json
    .venv/bin/python bench/loop.py --shop          # the demo shop's get_order_status, which reads its tables
    .venv/bin/python bench/loop.py --checkpoint    # also: WAL per step in the 10 steps after a CHECKPOINT

The stub stands in for llm.complete: every model turn asks for one order status (a
read-only tool that runs without review), the shape of LangGraph's ReAct benchmark,
and the last turn answers in text. By default the tool answers from a constant, as the
peers' tool does (bench/peers/), so that what is measured is the loop; --shop calls
the demo shop's get_order_status instead (one SQL statement of its own). Statements
are every SQL statement the Django connection sends between two model turns, the
tool's own included; WAL is what pg_walinspect finds for this database between two
model turns. With --checkpoint, a CHECKPOINT before the middle turn: the first change of
each page after it writes the whole page to the WAL, so an index whose inserts land on
random pages (a hash, say) writes full pages for many steps, where appends write one.
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DEFAULT_DB, median, setup_django
from bench.peers.walbytes import Turns, Wal


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/sidebyside.py)")
    parser.add_argument("--shop", action="store_true", help="the demo shop's get_order_status, not a constant")
    parser.add_argument("--checkpoint", action="store_true", help="a CHECKPOINT before the middle turn")
    return parser.parse_args()


ORDER = {"status": "delivered", "items": "Kettle (1)", "total": "49.00", "refunded": "0.00"}  # the peers' answer


def register_constant_tool() -> str:
    """A read-only order status answered from a constant, as the peers' tool is; allowed to the orders agent."""
    from approvals.models import Tier
    from approvals.tools import Tool, registry
    from shop.tools import OrderArgs

    tool = Tool(
        name="bench_order_status",
        description="Get an order's status, items, total and what was refunded.",
        args_model=OrderArgs,
        tier=Tier.READ_ONLY,
        func=lambda args, ctx: json.dumps(ORDER | {"order_id": args.order_id}),
        describe=lambda args: f"Look up order {args.order_id}",
    )
    registry.register(tool)
    registry.allow(agent="orders", tools=[*registry.allowed("orders"), tool.name])
    return tool.name


class Stub:
    """llm.complete: one order status call per turn until `steps` turns, then a text answer; marks each turn."""

    def __init__(self, steps: int, turns: Turns, counter: list[int], tool: str, checkpoint_at: int | None = None):
        self.steps, self.turns, self.counter, self.tool = steps, turns, counter, tool
        self.checkpoint_at = checkpoint_at
        self.statements: list[int] = []

    def __call__(self, messages, tools, **kwargs):
        from agents.llm import Reply
        from approvals.services import ProposedCall

        self.statements.append(self.counter[0])
        if len(self.statements) == self.checkpoint_at:
            self.turns.wal.conn.execute("checkpoint")
        self.turns.mark()
        turn = len(self.statements)
        if turn > self.steps:
            return Reply(content="All done.", calls=[])
        arguments = json.dumps({"order_id": "A-1002"})
        call = ProposedCall(call_id=f"call_{turn}", name=self.tool, raw_arguments=arguments)
        return Reply(content="", calls=[call])


def run_loop(steps: int, database_url: str, *, shop: bool = False, checkpoint: bool = False) -> dict:
    from django.db import connection

    from agents import llm, loop
    from approvals import services
    from approvals.models import Run

    counter = [0]

    def count(execute, sql, params, many, context):
        counter[0] += 1
        return execute(sql, params, many, context)

    tool = "get_order_status" if shop else register_constant_tool()
    middle = steps // 2 if checkpoint else None
    stub = Stub(steps, Turns(Wal(database_url)), counter, tool, checkpoint_at=middle)
    run = services.run_create(agent="orders", request="Where is order A-1002?")
    Run.objects.filter(pk=run.pk).update(max_steps=steps + 1)
    llm.complete, original = stub, llm.complete
    try:
        with connection.execute_wrapper(count):
            loop.advance(run.pk)
    finally:
        llm.complete = original
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED, (run.status, run.last_error)
    statements = [b - a for a, b in zip(stub.statements, stub.statements[1:])]
    figures = stub.turns.summary()
    figures |= {"statements_first10": median(statements[:10]), "statements_last10": median(statements[-10:])}
    figures["tool"] = tool
    if middle:
        after = stub.turns.wal_per_step(stub.turns.lsns[middle - 1 : middle + 10])
        figures |= {
            "wal_kib_after_checkpoint_median": median(after) / 1024,
            "wal_kib_after_checkpoint_mean": sum(after) / len(after) / 1024,
        }
    return figures


def main():
    args = parse_args()
    setup_django(args.database_url)
    result = run_loop(args.steps, args.database_url, shop=args.shop, checkpoint=args.checkpoint)
    if args.json:
        print(json.dumps(result))
        return
    print(f"ReviewHub loop, {result['steps']} steps with a stub model (one {result['tool']} per turn)")
    print(f"  total {result['total_s']:.2f} s, {result['steps_per_s']:.1f} steps/s")
    print(f"  ms per step: first 10 {result['ms_per_step_first10']:.1f}, last 10 {result['ms_per_step_last10']:.1f}")
    print(f"  SQL statements per step: first 10 {result['statements_first10']}, last 10 {result['statements_last10']}")
    print(f"  WAL per step: first 10 {result['wal_kib_first10']:.1f} KiB, last 10 {result['wal_kib_last10']:.1f} KiB")
    if args.checkpoint:
        median_kib, mean_kib = result["wal_kib_after_checkpoint_median"], result["wal_kib_after_checkpoint_mean"]
        print(f"  WAL per step, 10 steps after a CHECKPOINT: median {median_kib:.1f} KiB, mean {mean_kib:.1f} KiB")


if __name__ == "__main__":
    main()
