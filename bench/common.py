"""What the benchmarks share: a PostgreSQL database of their own, Django set up on it, WAL and percentiles.

WAL and latency helpers live in bench/peers/walbytes.py, which the peers (no Django) use too.

Imported by the bench scripts after they put the project root on sys.path.
"""

import os
import statistics
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/reviewhub_bench_loop"


def database_and_server(url: str) -> tuple[str, str]:
    """A database URL's database name, and the URL of its server's `postgres` database (its options kept:
    `?options=-c ...` names no database)."""
    parts = urlsplit(url)
    return unquote(parts.path.lstrip("/")), urlunsplit(parts._replace(path="/postgres"))


def ensure_database(url: str) -> None:
    import psycopg

    name, server = database_and_server(url)
    with psycopg.connect(server, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_database where datname = %s", [name]).fetchone():
            conn.execute(f'create database "{name}"')


def setup_django(database_url: str, **environ: str) -> None:
    """Django on the bench database, migrated, with the demo shop; decisions resume nothing unless told to."""
    ensure_database(database_url)
    os.environ["DJANGO_SETTINGS_MODULE"] = "reviewhub.settings"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("REVIEWHUB_RESUME", "bench.common.resume_nothing")
    os.environ.update(environ)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from shop.demo_data import seed_shop

    seed_shop()


def resume_nothing(run_id: int, *, approved: bool = False) -> None:
    """REVIEWHUB_RESUME for benchmarks that drive the loop themselves."""


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)
