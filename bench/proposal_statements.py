"""The SQL statements and transactions of one request on the agent API's proposal path (issue 26).

    .venv/bin/python bench/proposal_statements.py           # counts per request
    .venv/bin/python bench/proposal_statements.py --sql     # and every statement

Each request goes through Django's test client in-process, on PostgreSQL (DATABASE_URL, default a
reviewhub_bench_proposals database, created if missing), in real transactions: what runs after the commit
(pushes, the resumption seam, webhooks) is counted too. Requests, each by a fresh agent whose token was used
once already: a proposal opening a new thread, the next proposal in that thread, the idempotent retry of it,
a turn review, a checkpoint, a question; then the same with a webhook registered and the demo's rules
(manage.py demo's governance). Statements are counted without BEGIN/COMMIT/SAVEPOINT; transactions are COMMITs.
"""

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import setup_django

DB = "postgres://postgres@127.0.0.1:5432/reviewhub_bench_proposals"
CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DB))
    parser.add_argument("--sql", action="store_true", help="print every statement")
    return parser.parse_args()


def requests(agent) -> list[tuple[str, callable]]:
    """(label, send) for each request measured, in the order they are sent."""
    from tests.agentapi import PROPOSAL
    from tests.test_api_checkpoints import CHECKPOINT, REPLY_TOOL
    from tests.test_api_questions import LOOKUP_TOOL, QUESTION
    from tests.test_api_turns import TURN

    agent.declare()
    agent.declare("reply", **REPLY_TOOL)
    agent.declare("choose_order", **LOOKUP_TOOL)
    agent.get("/tools")  # the token's first use writes its last_used_at, once a minute at most
    second = PROPOSAL | {"idempotency_key": "4711-2", "arguments": PROPOSAL["arguments"] | {"amount": 12}}
    question = PROPOSAL | {"tool": "choose_order", "arguments": {"email": "dana@example.com"}, "question": QUESTION}
    return [
        ("proposal, new thread", lambda: agent.post("/calls", PROPOSAL)),
        ("proposal, same thread", lambda: agent.post("/calls", second)),
        ("idempotent retry", lambda: agent.post("/calls", second)),
        ("turn review", lambda: agent.post("/turns", TURN | {"thread_id": "turns"})),
        ("checkpoint", lambda: agent.post("/calls", CHECKPOINT)),
        ("question", lambda: agent.post("/calls", question | {"idempotency_key": "q-1"})),
    ]


def measure(label: str, send, show_sql: bool) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = send()
    assert response.status_code in (200, 201), response.content
    sql = [q["sql"] for q in queries.captured_queries]
    statements = [s for s in sql if not s.startswith(CONTROL)]
    commits = sum(s.startswith("COMMIT") for s in sql)
    print(f"  {label:<24} {response.status_code}  {len(statements):>3} statements  {commits} transaction(s)")
    for s in sql if show_sql else ():
        print("      " + " ".join(s.split())[:400])


def main() -> None:
    args = parse_args()
    setup_django(args.database_url, REDIS_URL="", REVIEWHUB_WEBHOOK_ALLOW_PRIVATE="1")
    from approvals.policy import snapshot as policy_snapshot
    from shop import demo_data
    from tests.agentapi import AgentClient

    for governed in (False, True):
        if governed:
            demo_data.seed_governance()
        policy_snapshot.current()
        agent = AgentClient(f"bench-{uuid.uuid4().hex[:8]}")
        sends = requests(agent)
        if governed:
            assert agent.post("/webhooks", {"url": "http://127.0.0.1:9/hook"}).status_code == 201
        print("With a webhook and the demo's rules:" if governed else "No webhook, no rules:")
        for label, send in sends:
            measure(label, send, args.sql)


if __name__ == "__main__":
    main()
