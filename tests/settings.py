"""Test settings: the real ones, with PostgreSQL when it is reachable.

Tests use PostgreSQL (DATABASE_URL, else 127.0.0.1:5432) when it answers and
fall back to SQLite with a printed notice; tests that need PostgreSQL or
Redis skip with a clear message where those are absent.
"""

import hashlib
import os
import socket
import sys
from pathlib import Path

# The tests talk plain HTTP; a key of their own (the settings refuse to start without one).
os.environ.setdefault("SECRET_KEY", "tests-only-" + "k3y" * 16)
os.environ.setdefault("REVIEWHUB_INSECURE_HTTP", "1")

from reviewhub.settings import *
from reviewhub.settings import DATABASE_URL, dj_database_url


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# A push thread that kept its connection would keep the test database from being dropped at the end;
# tests/approvals/test_live_fanout.py turns the reuse on for its test of it, and closes the connection.
PUSH_CONN_MAX_AGE = 0
WEB_CONN_MAX_AGE = 0  # the request slots' threads likewise (runtime/slots.py; tests/runtime/test_slots.py)

# Each test run gets its own database name on a shared server (two suites, of one checkout or two, must not
# drop each other's): the checkout and the process. REVIEWHUB_TEST_DB names it instead.
_CHECKOUT = hashlib.sha256(str(Path(__file__).resolve().parent.parent).encode()).hexdigest()[:10]
TEST_DB_NAME = os.environ.setdefault("REVIEWHUB_TEST_DB", f"reviewhub_{_CHECKOUT}_{os.getpid()}")  # children too
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
elif reachable("127.0.0.1", 5432):
    DATABASES = {"default": dj_database_url.parse(f"postgres://postgres@127.0.0.1:5432/{TEST_DB_NAME}")}
else:
    sys.stderr.write(
        "PostgreSQL is not reachable on 127.0.0.1:5432: tests run on SQLite; PostgreSQL-only tests skip.\n"
    )
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
DATABASES["default"]["TEST"] = (
    {"NAME": f"test_{TEST_DB_NAME}"} if "postgresql" in DATABASES["default"]["ENGINE"] else {}
)

REDIS_TEST_URL = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/9")
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
TASKS_IN_PROCESS = True
# Celery, when a test turns it on, talks to Redis on a queue of this test process only.
CELERY_BROKER_URL = REDIS_TEST_URL
CELERY_TASK_DEFAULT_QUEUE = f"reviewhub-test-{os.getpid()}"
TURNS_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-turns"
TOOLS_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-tools"
# Tests advance runs explicitly; resumptions are recorded, not run in threads.
REVIEWHUB_RESUME = "tests.support.record_resume"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MODEL_RETRY_BACKOFF = 0.01
OPENAI_MAX_RETRIES = 2
OPENAI_TIMEOUT = 10
OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # replaced by the model_server fixture
REVIEWHUB_AGUI_RESUME = "tests.support.record_resume"  # AG-UI runs too: tests advance them explicitly
