"""Health checks: is the process up (/healthz), and can it do its work (/readyz).

Readiness checks the database, Redis and the Celery broker (production-like mode only:
the embedded default has neither), that every migration is applied, and there that a
Celery worker was seen lately (workers write a heartbeat to Redis, see heartbeat.py).
Each check reports whether it passed and how long it took; none says more than that.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from . import heartbeat


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    ms: float
    detail: str = ""  # a short, fixed phrase: never an exception's text, which may name hosts or users

    def as_dict(self) -> dict:
        shown = {"ok": self.ok, "ms": round(self.ms, 1)}
        return shown | ({"detail": self.detail} if self.detail else {})


def timed(name: str, probe: Callable[[], str]) -> Check:
    """Run one probe; it returns "" when all is well or a short phrase saying what is not, or raises."""
    start = time.perf_counter()
    try:
        detail = probe()
    except Exception:
        detail = "unreachable"
    return Check(name, not detail, (time.perf_counter() - start) * 1000, detail)


def database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


_migrated = False  # once every migration is applied, it stays so for this process's code


def migrations() -> str:
    global _migrated
    if not _migrated:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        _migrated = not executor.migration_plan(executor.loader.graph.leaf_nodes())
    return "" if _migrated else "migrations not applied"


def redis() -> str:
    heartbeat.client().ping()
    return ""


def broker() -> str:
    from celery import current_app  # the project's Celery app (reviewhub/celery.py), configured at startup

    with current_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=0, timeout=2)
    return ""


def workers() -> str:
    return "" if heartbeat.recent_workers() else "no Celery worker seen lately"


def production_like() -> bool:
    return bool(settings.REDIS_URL) and not settings.TASKS_IN_PROCESS


def readiness() -> list[Check]:
    checks = [timed("database", database), timed("migrations", migrations)]
    if settings.REDIS_URL:
        checks.append(timed("redis", redis))
    if production_like():
        checks += [timed("broker", broker), timed("workers", workers)]
    return checks
