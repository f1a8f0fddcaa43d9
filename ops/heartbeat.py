"""Celery workers say they are alive: each worker's main process writes its name and the time
to a Redis sorted set every few seconds; /readyz asks whether any did so lately."""

import logging
import threading
import time

import redis as redis_py
from django.conf import settings

log = logging.getLogger(__name__)

KEY = "reviewhub:workers"
INTERVAL = 10.0
RECENT = 3 * INTERVAL  # a worker silent this long is not counted

_client: redis_py.Redis | None = None


def client() -> redis_py.Redis:
    global _client
    if _client is None:
        _client = redis_py.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    return _client


def beat(hostname: str) -> None:
    now = time.time()
    pipe = client().pipeline()
    pipe.zadd(KEY, {hostname: now})
    pipe.zremrangebyscore(KEY, 0, now - 10 * RECENT)  # forget workers long gone
    pipe.execute()


def recent_workers() -> list[str]:
    names = client().zrangebyscore(KEY, time.time() - RECENT, "+inf")
    return [name.decode() for name in names if isinstance(name, bytes)]  # members come as bytes


def start(hostname: str) -> threading.Event:
    """Beat every INTERVAL seconds from a daemon thread of the worker's main process, until the event is set."""
    stop = threading.Event()
    if not settings.REDIS_URL:
        return stop

    def loop():
        while True:
            try:
                beat(hostname)
            except Exception as exc:  # Redis away: readiness will say so
                log.warning("worker heartbeat failed: %s", exc)
            if stop.wait(INTERVAL):
                return

    threading.Thread(target=loop, daemon=True, name="reviewhub-heartbeat").start()
    return stop
