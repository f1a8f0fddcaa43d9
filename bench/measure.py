"""Time the auditor's pages and verify_audit on a seeded database (see bench/seed.py).

    DATABASE_URL=postgres://USER@HOST:5432/DBNAME python bench/measure.py

Pages are requested in-process through Django's test client, logged in as the
seeded auditor: the time is the server's (middleware, queries, templates), not
the network's. Each page is fetched once to warm up, then --repeat times; the
median and the slowest are printed with the number of SQL queries.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from approvals import audit, export  # noqa: E402
from approvals.models import AuditEvent, Decision, ToolCall  # noqa: E402

BUDGET_MS = 300


def pages() -> list[tuple[str, str]]:
    today = timezone.localdate()
    day = today - timedelta(days=90)
    call = list(
        ToolCall.objects.filter(tool_name="issue_refund", status="executed")
        .order_by("-pk")
        .values_list("pk", "run_id")[:501]
    )[-1]
    order = ToolCall.objects.get(pk=call[0]).arguments["order_id"]
    reviewer = Decision.objects.filter(reviewer__isnull=False).values_list("reviewer_id", flat=True).first()
    event = AuditEvent.objects.filter(tool_call_id=call[0]).values_list("pk", flat=True).first()
    a = "/admin/approvals"
    return [
        ("audit events", f"{a}/auditevent/"),
        ("audit events, kind=decided", f"{a}/auditevent/?kind=decided"),
        ("audit events, tool=send_email", f"{a}/auditevent/?tool=send_email"),
        (
            "audit events, one day 90 days ago",
            f"{a}/auditevent/?created_at__gte={day}&created_at__lt={day + timedelta(days=1)}",
        ),
        ("audit events, one reviewer", f"{a}/auditevent/?actor={reviewer}"),
        ("audit events, search run id", f"{a}/auditevent/?q={call[1]}"),
        ("audit events, search order", f"{a}/auditevent/?q={order}"),
        ("audit events, search customer", f"{a}/auditevent/?q=Noor"),
        ("audit event page", f"{a}/auditevent/{event}/change/"),
        ("tool calls", f"{a}/toolcall/"),
        ("tool calls, tool+outcome", f"{a}/toolcall/?tool=issue_refund&outcome=edit"),
        ("tool calls, tier+reviewer", f"{a}/toolcall/?tier=approval&reviewer={reviewer}"),
        (
            "tool calls, one day 90 days ago",
            f"{a}/toolcall/?created_at__gte={day}&created_at__lt={day + timedelta(days=1)}",
        ),
        ("tool calls, search order", f"{a}/toolcall/?q={order}"),
        ("tool calls, search customer", f"{a}/toolcall/?q=Noor"),
        ("tool calls, sorted by time", f"{a}/toolcall/?o=8"),
        ("a call's chain page", f"{a}/toolcall/{call[0]}/change/"),
        ("decisions", f"{a}/decision/"),
        ("decisions, verdict+reviewer", f"{a}/decision/?verdict=reject&reviewer={reviewer}"),
        ("runs", f"{a}/run/"),
        ("runs, search customer", f"{a}/run/?q=Noor"),
        ("messages", f"{a}/message/"),
        ("policy rules", f"{a}/policyrule/"),
        ("insight, last 30 days", "/insight/"),
        ("insight, last 30 days, one tool", "/insight/?tool=issue_refund"),
        ("insight, 90 days", f"/insight/?since={today - timedelta(days=89)}&until={today}"),
    ]


def measure(client: Client, url: str, repeat: int) -> tuple[int, float, float, int]:
    response = client.get(url)  # warm up
    times = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
    return response.status_code, statistics.median(times), max(times), len(queries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-verify", action="store_true")
    options = parser.parse_args()
    auditor = get_user_model().objects.get(username="auditor")
    client = Client()
    client.force_login(auditor)
    print(
        f"{AuditEvent.objects.count():,} audit events, {ToolCall.objects.count():,} tool calls on {connection.vendor}\n"
    )
    print(f"{'page':<40} {'status':>6} {'median ms':>10} {'max ms':>8} {'queries':>8}")
    slow = []
    for name, url in pages():
        status, median, slowest, queries = measure(client, url, options.repeat)
        flag = "" if median < BUDGET_MS else "  <-- over budget"
        if flag or status != 200:
            slow.append(name)
        print(f"{name:<40} {status:>6} {median:>10.1f} {slowest:>8.1f} {queries:>8}{flag}")

    started = time.perf_counter()
    lines = sum(1 for _ in export.lines(export.ExportFilter(since=timezone.now() - timedelta(days=7)), "jsonl"))
    print(f"\nexport of the last 7 days (JSONL): {lines:,} events in {time.perf_counter() - started:.1f} s")
    if not options.skip_verify:
        started = time.perf_counter()
        check = audit.verify()
        print(
            f"verify_audit: {check.count:,} events in {time.perf_counter() - started:.1f} s,"
            f" {'intact' if check.ok else check.problem}"
        )
    if slow:
        print(f"\nOver {BUDGET_MS} ms or not 200: {', '.join(slow)}")


if __name__ == "__main__":
    main()
