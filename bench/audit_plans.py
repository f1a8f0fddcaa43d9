"""How each read of the audit trail is answered: EXPLAIN ANALYZE of every query the code sends, on a big trail.

    .venv/bin/python bench/seed.py --events 400000 --calls 40000      # into an empty database of its own
    .venv/bin/python bench/audit_plans.py --database-url postgres://USER@HOST:5432/DBNAME

Each scenario runs the code itself (an admin page, an export, the sweeps, the call page, the insight page,
verification's walk, the delete triggers) under Django's query capture; every captured SELECT that reads
approvals_auditevent is then run again under EXPLAIN (ANALYZE, BUFFERS), and its time, the buffers it read
and the indexes it used are printed. Which indexes each event must write follows from this list
(approvals/models/audit.py); run it before and after changing them. Needs a seeded database (bench/seed.py).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DEFAULT_DB, setup_django


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def _auditor_pages():
    """page(url): a callable that GETs the url as a logged-in superuser and checks it answered 200."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="plans-auditor", defaults={"is_staff": True})
    user.is_staff = user.is_superuser = True
    user.save()
    client = Client()
    client.force_login(user)

    def page(url):
        def get():
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return get

    return page


def _rare_kind() -> str:
    """The rarest kind of event in the trail outside the routine ones (an anchor when there is none)."""
    from django.db.models import Count

    from approvals.models import AuditEvent

    routine = ["resumed", "executed", "executing", "proposed", "decided", "auto_run"]
    kinds = AuditEvent.objects.exclude(kind__in=routine).values("kind").annotate(n=Count("pk")).order_by("n")
    return kinds.values_list("kind", flat=True).first() or "anchor"


def scenarios():
    """(name, callable) pairs: each runs one read path of the code as it stands."""
    page, sample = _auditor_pages(), _sample()
    return _admin_reads(page, sample) + _other_reads(page, sample)


def _sample() -> SimpleNamespace:
    """What the reads ask about: the newest event's dates, a decided call and its tool, the newest run, a reviewer,
    an event in the middle of the trail, the rarest kind."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals.models import AuditEvent, Run, ToolCall

    newest = AuditEvent.objects.order_by("-pk").values_list("created_at", flat=True).first() or timezone.now()
    call = ToolCall.objects.filter(audit_events__kind="decided").order_by("-pk").first()
    return SimpleNamespace(
        newest=newest,
        month_ago=(newest - timedelta(days=30)).date().isoformat(),
        week_ago=(newest - timedelta(days=7)).date().isoformat(),
        day=(newest + timedelta(days=1)).date().isoformat(),
        call=call,
        run=Run.objects.order_by("-pk").first(),
        actor_id=AuditEvent.objects.filter(actor__isnull=False).values_list("actor_id", flat=True).first(),
        tool=call.tool_name if call else "refund",
        middle=AuditEvent.objects.order_by("pk").values_list("pk", flat=True)[200_000:200_001].first() or 1,
        rare=_rare_kind(),
    )


def _admin_reads(page, s: SimpleNamespace) -> list:
    admin, rare = "/admin/approvals/auditevent/", s.rare
    return [
        ("admin list, newest first", page(admin)),
        ("admin list, past 30 days", page(f"{admin}?created_at__gte={s.month_ago}&created_at__lt={s.day}")),
        ("admin list, a frequent kind (decided)", page(f"{admin}?kind=decided")),
        (f"admin list, a rare kind ({rare})", page(f"{admin}?kind={rare}")),
        (f"admin list, a rare kind ({rare}), past 7 days", page(f"{admin}?kind={rare}&created_at__gte={s.week_ago}")),
        ("admin list, a reviewer", page(f"{admin}?actor={s.actor_id}")),
        (f"admin list, a tool ({s.tool})", page(f"{admin}?tool={s.tool}")),
        ("admin search, a run's id", page(f"{admin}?q={s.run.pk}")),
        ("admin search, a run's UUID", page(f"{admin}?q={s.run.public_id}")),
        ("admin search, a call's id", page(f"{admin}?q={s.call.pk}")),
        ("admin event page", page(f"{admin}{s.middle}/change/")),
        ("admin call page (its chain)", page(f"/admin/approvals/toolcall/{s.call.pk}/change/")),
    ]


def _other_reads(page, s: SimpleNamespace) -> list:
    from datetime import timedelta

    from approvals import audit
    from approvals.audit import export
    from approvals.models import AuditEvent

    return [
        (
            "export, past 7 days, first 2 chunks",
            lambda: _take(export.rows(export.ExportFilter(s.newest - timedelta(days=7), None)), 10_000),
        ),
        ("export, a tool", lambda: _take(export.rows(export.ExportFilter(tool=s.tool)), 10_000)),
        ("verify's walk, 2 chunks", lambda: _take(audit.in_chunks(AuditEvent.objects.all(), ("id", "hash")), 10_000)),
        ("call chain", lambda: audit.call_chain(s.call)),
        ("insight page", page("/insight/")),
        ("sweep: a run's last progress", lambda: _sweep_progress(s.run)),
        ("AG-UI stalled-run sweep", lambda: _agui_sweep()),
        ("remote: unreported and unclaimed calls", lambda: _remote_sweeps()),
        ("run page", page(f"/runs/{s.run.pk}/")),
    ]


def _take(rows, n):
    for i, _ in enumerate(rows):
        if i + 1 >= n:
            return


def _sweep_progress(run):
    from approvals.services import sweep

    sweep.last_progress(run)
    sweep._attempts(run, run.created_at)


def _agui_sweep():
    from agui import sweep

    list(sweep.resumable())


def _remote_sweeps():
    from approvals.services import sweep
    from remote import unclaimed

    list(sweep.unreported_calls())
    list(unclaimed.unclaimed_calls())


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def explain(sql: str) -> dict:
    """The query's execution time, the buffers it touched, the indexes it used, and whether it read the whole
    events table (a sequential scan of it)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
    top = (plan if isinstance(plan, list) else json.loads(plan))[0]
    nodes = list(_nodes(top["Plan"]))
    return {
        "ms": top["Execution Time"],
        "indexes": sorted({node["Index Name"] for node in nodes if "Index Name" in node}),
        "seq_scan": any(
            node["Node Type"] == "Seq Scan" and node.get("Relation Name") == "approvals_auditevent" for node in nodes
        ),
        "buffers": top["Plan"].get("Shared Hit Blocks", 0) + top["Plan"].get("Shared Read Blocks", 0),
    }


def run_scenario(name, action) -> list[dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        began = time.perf_counter()
        action()
        elapsed = time.perf_counter() - began
    found = []
    for query in captured.captured_queries:
        sql = query["sql"]
        if "approvals_auditevent" in sql and sql.lstrip().upper().startswith("SELECT"):
            found.append({"sql": sql, **explain(sql)})
    return [{"scenario": name, "wall_ms": 1000 * elapsed, "queries": found}]


def main():
    args = parse_args()
    setup_django(args.database_url, LOG_LEVEL="WARNING")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE approvals_auditevent")
        cursor.execute("SELECT count(*) FROM approvals_auditevent")
        events = cursor.fetchone()[0]
    results = []
    for name, action in scenarios():
        for _ in range(2):  # the second time warm
            result = run_scenario(name, action)
        results += result
    if args.json:
        print(json.dumps(results, default=str))
        return
    print(f"{events:,} audit events; load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for result in results:
        print(f"\n{result['scenario']} ({result['wall_ms']:.0f} ms in all)")
        for query in result["queries"]:
            where = ", ".join(query["indexes"]) or "no index"
            scan = "; SEQ SCAN of the events" if query["seq_scan"] else ""
            print(f"  {query['ms']:8.2f} ms  {query['buffers']:>6} buffers  {where}{scan}")
            print(f"           {query['sql'][:150]}")


if __name__ == "__main__":
    main()
