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
from datetime import date, timedelta
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

from approvals import audit  # noqa: E402
from approvals.audit import export  # noqa: E402
from approvals.models import AuditEvent, Decision, ToolCall  # noqa: E402

BUDGET_MS = 300
ADMIN = "/admin/approvals"


def pages() -> list[tuple[str, str]]:
    """The auditor's pages, named, with filters and searches that hit a sampled call, its order and a reviewer."""
    today = timezone.localdate()
    day = today - timedelta(days=90)
    call_id, run_id = list(
        ToolCall.objects.filter(tool_name="issue_refund", status="executed")
        .order_by("-pk")
        .values_list("pk", "run_id")[:501]
    )[-1]
    order = ToolCall.objects.get(pk=call_id).arguments["order_id"]
    reviewer = Decision.objects.filter(reviewer__isnull=False).values_list("reviewer_id", flat=True).first()
    event = AuditEvent.objects.filter(tool_call_id=call_id).values_list("pk", flat=True).first()
    return [
        *audit_event_pages(day=day, reviewer=reviewer, run_id=run_id, order=order, event=event),
        *tool_call_pages(day=day, reviewer=reviewer, order=order, call_id=call_id),
        ("decisions", f"{ADMIN}/decision/"),
        ("decisions, verdict+reviewer", f"{ADMIN}/decision/?verdict=reject&reviewer={reviewer}"),
        ("runs", f"{ADMIN}/run/"),
        ("runs, search customer", f"{ADMIN}/run/?q=Noor"),
        ("messages", f"{ADMIN}/message/"),
        ("policy rules", f"{ADMIN}/policyrule/"),
        ("insight, last 30 days", "/insight/"),
        ("insight, last 30 days, one tool", "/insight/?tool=issue_refund"),
        ("insight, 90 days", f"/insight/?since={today - timedelta(days=89)}&until={today}"),
    ]


def one_day(day: date) -> str:
    return f"created_at__gte={day}&created_at__lt={day + timedelta(days=1)}"


def audit_event_pages(*, day: date, reviewer: int, run_id: int, order: str, event: int) -> list[tuple[str, str]]:
    a = f"{ADMIN}/auditevent"
    return [
        ("audit events", f"{a}/"),
        ("audit events, kind=decided", f"{a}/?kind=decided"),
        ("audit events, tool=send_email", f"{a}/?tool=send_email"),
        ("audit events, one day 90 days ago", f"{a}/?{one_day(day)}"),
        ("audit events, one reviewer", f"{a}/?actor={reviewer}"),
        ("audit events, search run id", f"{a}/?q={run_id}"),
        ("audit events, search order", f"{a}/?q={order}"),
        ("audit events, search customer", f"{a}/?q=Noor"),
        ("audit event page", f"{a}/{event}/change/"),
    ]


def tool_call_pages(*, day: date, reviewer: int, order: str, call_id: int) -> list[tuple[str, str]]:
    t = f"{ADMIN}/toolcall"
    return [
        ("tool calls", f"{t}/"),
        ("tool calls, tool+outcome", f"{t}/?tool=issue_refund&outcome=edit"),
        ("tool calls, tier+reviewer", f"{t}/?tier=approval&reviewer={reviewer}"),
        ("tool calls, one day 90 days ago", f"{t}/?{one_day(day)}"),
        ("tool calls, search order", f"{t}/?q={order}"),
        ("tool calls, search customer", f"{t}/?q=Noor"),
        ("tool calls, sorted by time", f"{t}/?o=8"),
        ("a call's chain page", f"{t}/{call_id}/change/"),
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
