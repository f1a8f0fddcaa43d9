"""Does the catch rate measure what it claims? Two scripted reviewers decide the same kind of queue.

    .venv/bin/python bench/catch_rate.py                  # 30 real refunds and 10 practice calls each
    .venv/bin/python bench/catch_rate.py --real 60 --every 4

For each reviewer, on a fresh PostgreSQL database of its own: REAL refunds are proposed through the gate, each
on the order its request names and within what is refundable; after every EVERY-th, a practice copy is planted
(practice.services.practice_plant: a refund ten times the order total, or another customer's order, in turn).
Each reviewer opens every card (their review claim) and decides it through services.toolcall_decide:
"approve-everything" approves all (acknowledging any warning); "reads-the-warnings" rejects a call whose facts
warn or whose order is not the one its request names, and approves the others. Printed: each one's catch rate
with its 95 % Wilson interval (practice.insight), and what they did with the real calls. Nothing is executed.
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import database_and_server, setup_django  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/reviewhub_bench_catch"
# Above the $20 that a seeded rule runs without review, within what each order can refund.
ORDERS = [("A-1001", 30), ("A-1002", 35), ("A-1003", 40), ("A-1004", 80), ("A-1005", 22)]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=int, default=30, help="real refunds each reviewer decides")
    parser.add_argument("--every", type=int, default=3, help="one practice call after every N real ones")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def fresh_database(url: str) -> None:
    import psycopg

    name, server = database_and_server(url)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


def queue(requester, real: int, every: int) -> list:
    """REAL real refunds, a practice copy after every EVERY-th; returns the calls waiting, in order."""
    from approvals import services
    from approvals.models import Message, Run
    from approvals.services import ProposedCall
    from practice.services import practice_plant
    from shop.mistakes import REFUND_MISTAKES

    mistakes = [m for m in REFUND_MISTAKES if m.name in ("amount_above_refundable", "other_customers_order")]
    calls = []
    for i in range(real):
        order, amount = ORDERS[i % len(ORDERS)]
        run = Run.objects.create(agent="support", request=f"Order {order} arrived damaged. Please refund ${amount}.")
        run.requested_by = requester
        run.save(update_fields=["requested_by"])
        services.message_append(run=run, role=Message.Role.USER, content=run.request)
        arguments = json.dumps({"order_id": order, "amount": amount, "reason": "Arrived damaged"})
        services.step_record(run=run, content="Refunding.", calls=[ProposedCall("call_1", "issue_refund", arguments)])
        calls.append(run.tool_calls.get())
        if (i + 1) % every == 0:
            turn = [mistakes[(i // every + k) % len(mistakes)] for k in range(len(mistakes))]
            practice = next(filter(None, (practice_plant(source=calls[-1], mistake=m) for m in turn)))
            calls.append(practice.tool_call)
    return calls


def reads_the_warnings(call) -> bool:
    """Approve only when the facts do not warn and the order is the one the request names."""
    return not call.warning and call.arguments["order_id"] in call.user_request


def decide_all(reviewer, calls, approves) -> dict:
    from approvals import services
    from approvals.models import ToolCall

    done = {"real_approved": 0, "real_rejected": 0}
    for call in calls:
        call = ToolCall.objects.select_related("run").get(pk=call.pk)
        services.toolcall_review_start(call_id=call.pk, reviewer=reviewer)
        approve = approves(call)
        if approve:
            services.toolcall_decide(
                call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash, approve_anyway=True
            )
        else:
            reason = call.warning or "Not the order the customer asked about."
            services.toolcall_decide(
                call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.review_hash, reason=reason
            )
        if not hasattr(call, "practice"):
            done["real_approved" if approve else "real_rejected"] += 1
    return done


def main() -> None:
    args = parse_args()
    fresh_database(args.database_url)
    setup_django(args.database_url)
    from django.contrib.auth import get_user_model

    from approvals.insight import Window
    from approvals.roles import reviewers_group
    from practice.insight import catch_rates

    users = get_user_model().objects
    requester = users.create_user(username="ops-agent")
    results = []
    for name, approves in (("approve-everything", lambda call: True), ("reads-the-warnings", reads_the_warnings)):
        reviewer = users.create_user(username=name)
        reviewer.groups.add(reviewers_group())
        reviewer = users.get(pk=reviewer.pk)
        done = decide_all(reviewer, queue(requester, args.real, args.every), approves)
        row = next(r for r in catch_rates(Window.default(), "reviewer") if r.label == name)
        results.append(result_of(name, row, done))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print_results(results)


def result_of(name: str, row, done: dict) -> dict:
    """One reviewer's figures: their catch-rate row (practice.insight.CatchRow) and what they did with real calls."""
    low, high = row.interval
    result = {"reviewer": name, "caught": row.caught, "planted": row.planted, "rate": row.rate} | done
    return result | {"interval": [round(low, 3), round(high, 3)]}


def print_results(results: list[dict]) -> None:
    print(
        f"{'reviewer':<20} {'caught/planted':>14} {'rate':>6} {'95% Wilson':>13} {'real approved':>14} {'rejected':>9}"
    )
    for r in results:
        interval = f"{r['interval'][0]:.0%}–{r['interval'][1]:.0%}"
        line = f"{r['reviewer']:<20} {r['caught']:>6}/{r['planted']:<7} {r['rate']:>6.0%} {interval:>13}"
        print(f"{line} {r['real_approved']:>14} {r['real_rejected']:>9}")


if __name__ == "__main__":
    main()
