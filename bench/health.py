"""What /healthz, /readyz and /metrics cost, in-process through Django's test client.

    DATABASE_URL=postgres://USER@HOST:5432/DBNAME REDIS_URL=redis://127.0.0.1:6379/0 python bench/health.py

The database must be migrated. With REDIS_URL, readiness also checks Redis, the broker and the worker
heartbeat (production-like mode); a heartbeat is written first so the workers check passes. Each endpoint
is fetched once to warm up, then --repeat times; the median, p95 and slowest are printed with the number of
SQL queries. The time is the server's, not the network's.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do
os.environ.setdefault("METRICS_TOKEN", "bench-" + os.urandom(8).hex())
os.environ.setdefault("REVIEWHUB_INSECURE_HTTP", "1")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from ops import heartbeat  # noqa: E402


def timed(client: Client, path: str, repeat: int) -> tuple[list[float], int, int]:
    headers = {"Authorization": f"Bearer {settings.METRICS_TOKEN}"}
    status = client.get(path, headers=headers).status_code
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            client.get(path, headers=headers)
        times.append((time.perf_counter() - start) * 1000)
    return times, len(queries), status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    options = parser.parse_args()
    if settings.REDIS_URL:
        heartbeat.beat("bench@localhost")
    client = Client()
    print(f"{'endpoint':10} {'status':>6} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'queries':>8}")
    for path in ("/healthz", "/readyz", "/metrics"):
        times, queries, status = timed(client, path, options.repeat)
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"{path:10} {status:>6} {statistics.median(times):>10.2f} {p95:>8.2f} {max(times):>8.2f} {queries:>8}")


if __name__ == "__main__":
    main()
