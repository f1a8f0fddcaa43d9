"""The reviewer's queue page at 10 / 200 / 1,000 / 10,000 pending calls: server time, SQL queries, bytes.

    .venv/bin/python bench/queue_page.py
    .venv/bin/python bench/queue_page.py --sizes 10 200 1000 10000 --repeat 7

The page is requested in-process through Django's test client, logged in as a reviewer, so the time is the
server's (middleware, queries, templates), not the network's. Pending calls are written straight to the
table (tests/queueseed.py), added (or the newest deleted) to reach each size. Each page is fetched once to
warm up, then --repeat times; the median and the slowest are printed, and the median time of the page's
slowest SQL query (on the queue pages: the count and facets). Besides the plain queue: a search,
a filter, "mine", the sort by amount, the last page, and a group of similar calls.

Needs PostgreSQL: DATABASE_URL (default: a reviewhub_bench_queue database on 127.0.0.1:5432, created if
missing). The calls are left in place; --fresh deletes the pending calls of earlier runs first.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fanout import ensure_database  # noqa: E402

BUDGET = {"queries": 8, "ms": 50, "kb": 200}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 200, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="delete pending calls left by an earlier run")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reviewhub_bench_queue"),
    )
    return parser.parse_args()


def setup(args):
    os.environ["DJANGO_SETTINGS_MODULE"] = "reviewhub.settings"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["REDIS_URL"] = ""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def reviewer_client():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from shop import demo_data

    demo_data.setup_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-queue-reviewer")
    user.groups.add(Group.objects.get(name="reviewers"))
    client = Client()
    client.force_login(user)
    return client


def fill_to(size: int, requester) -> None:
    """Add pending calls until there are `size`: four refunds for each email, from two agents."""
    from approvals.models import ToolCall
    from tests.queueseed import pending_calls

    pending = ToolCall.objects.filter(status="pending")
    missing = size - pending.count()
    if missing < 0:  # more left by an earlier run: the newest go
        pending.filter(pk__in=list(pending.order_by("-pk").values_list("pk", flat=True)[:-missing])).delete()
    if missing > 0:
        emails = missing // 5
        pending_calls(missing - emails, requester=requester)
        pending_calls(emails, requester=requester, tool="send_email", agent="mailer")
    if missing:  # then VACUUM ANALYZE, as autovacuum would after so many rows (deleted ones slow every scan)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE approvals_toolcall")


def pages(size: int) -> list[tuple[str, str]]:
    last = max(1, -(-size // 50))
    return [
        ("queue", "/"),
        ("search 'order A-1003'", "/?q=order+A-1003"),
        ("tool=send_email", "/?tool=send_email"),
        ("mine, near deadline", "/?mine=1&near=1"),
        ("sort by amount", "/?sort=amount"),
        (f"last page ({last})", f"/?page={last}"),
        ("group: refunds under $50", "/queue/group/?tool=issue_refund&agent=support&band=under-50"),
    ]


def measure(client, url: str, repeat: int) -> tuple[int, float, float, int, int, float]:
    """Status, median and slowest ms, queries, bytes, and the median of the page's slowest query in ms."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm up
    times, slowest_sql = [], []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        slowest_sql.append(max((float(query["time"]) * 1000 for query in queries), default=0.0))
    status, median = response.status_code, statistics.median(times)
    return status, median, max(times), len(queries), len(response.content), statistics.median(slowest_sql)


def main():
    args = parse_args()
    ensure_database(args.database_url)
    setup(args)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from approvals.models import ToolCall

    if args.fresh:
        ToolCall.objects.filter(status="pending").delete()
    requester, _ = get_user_model().objects.get_or_create(username="bench-queue-requester")
    client = reviewer_client()
    print(f"PostgreSQL {connection.pg_version // 10000}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    print(
        f"{'pending':>8}  {'page':<30} {'status':>6} {'median ms':>10} {'max ms':>8} {'queries':>8} {'KB':>7}"
        f" {'slowest SQL ms':>15}"
    )
    over = []
    for size in sorted(args.sizes):
        fill_to(size, requester)
        for name, url in pages(size):
            status, median, slowest, queries, size_bytes, slowest_sql = measure(client, url, args.repeat)
            kb = size_bytes / 1000
            flag = queries > BUDGET["queries"] or median > BUDGET["ms"] or kb > BUDGET["kb"] or status != 200
            over += [f"{size} {name}"] if flag else []
            mark = "  <-- over budget" if flag else ""
            print(
                f"{size:>8}  {name:<30} {status:>6} {median:>10.1f} {slowest:>8.1f} {queries:>8} {kb:>7.1f}"
                f" {slowest_sql:>15.1f}{mark}"
            )
    print(f"\nload average now {os.getloadavg()[0]:.1f}; budget: ≤ 8 queries, ≤ 50 ms, ≤ 200 KB")
    if over:
        print("Over budget: " + "; ".join(over))


if __name__ == "__main__":
    main()
