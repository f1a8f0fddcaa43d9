"""/healthz and /readyz: plain JSON, no login, each check with its time, nothing leaked."""

import json

import pytest
from django.conf import settings as django_settings

from ops import heartbeat
from tests.stack import redis_available

pytestmark = pytest.mark.django_db


def body(response) -> dict:
    return json.loads(response.content)


@pytest.fixture
def production_like(settings):
    """Redis as broker and for the worker heartbeats, tasks on Celery workers rather than threads."""
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip("Redis is not reachable on the test URL")
    settings.REDIS_URL = settings.REDIS_TEST_URL
    settings.TASKS_IN_PROCESS = False
    heartbeat._client = None
    heartbeat.client().delete(heartbeat.KEY)
    yield
    heartbeat.client().delete(heartbeat.KEY)
    heartbeat._client = None


def test_healthz_answers_ok_to_anyone(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert body(response) == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_checks_the_database_and_the_migrations_with_their_times(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    shown = body(response)
    assert shown["status"] == "ready"
    assert set(shown["checks"]) == {"database", "migrations"}  # the embedded default has no Redis and no workers
    assert all(check["ok"] and check["ms"] >= 0 for check in shown["checks"].values())


def test_readyz_is_not_ready_without_a_worker_seen_lately(client, production_like):
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = body(response)["checks"]
    assert checks["redis"]["ok"] and checks["broker"]["ok"]
    assert checks["workers"] == {"ok": False, "ms": checks["workers"]["ms"], "detail": "no Celery worker seen lately"}


def test_readyz_is_ready_once_a_worker_has_beaten(client, production_like):
    heartbeat.beat("tools@host-1")
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert set(body(response)["checks"]) == {"database", "migrations", "redis", "broker", "workers"}


def test_an_unreachable_redis_fails_readiness_without_naming_it(client, settings):
    settings.REDIS_URL = "redis://secret-user:secret-password@127.0.0.1:9/0"
    heartbeat._client = None
    try:
        response = client.get("/readyz")
    finally:
        heartbeat._client = None
    assert response.status_code == 503
    assert body(response)["checks"]["redis"]["detail"] == "unreachable"
    assert b"secret" not in response.content and b"127.0.0.1" not in response.content


def test_a_worker_starts_beating_when_it_is_ready(production_like):
    from types import SimpleNamespace

    from reviewhub.celery import _start_heartbeat
    from tests.waiting import wait_for

    stop = _start_heartbeat(sender=SimpleNamespace(hostname="turns@host-2"))
    try:
        assert wait_for(lambda: "turns@host-2" in heartbeat.recent_workers(), timeout=30)
    finally:
        stop.set()
