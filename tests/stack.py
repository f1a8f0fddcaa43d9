"""Start real processes for end-to-end tests: an ASGI server and a Celery worker
on Redis and the test PostgreSQL database, or the embedded demo."""

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end_backend_of(conn) -> None:
    """What a PostgreSQL restart or an idle timeout does to a Django connection: the server ends it, saying why
    (returns once the goodbye is on the connection's socket)."""
    import psycopg

    db = conn.settings_dict
    pid = conn.connection.info.backend_pid
    with psycopg.connect(dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"], autocommit=True) as o:
        o.execute("SELECT pg_terminate_backend(%s)", [pid])
    assert select.select([conn.connection.fileno()], [], [], 10)[0], "the server's goodbye never arrived"


def redis_available(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
        return True
    except Exception:
        return False


def wait_for_http(url: str, timeout: float = 30, process: subprocess.Popen | None = None) -> None:
    def answers() -> bool:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            urllib.request.urlopen(url, timeout=1).close()
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    if not wait_for(answers, timeout=timeout, interval=0.2):
        raise TimeoutError(f"{url} did not answer within {timeout} s")


class Processes:
    def __init__(self, env: dict):
        self.env = {**os.environ, **env}
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, log_name: str) -> subprocess.Popen:
        log_dir = Path(self.env.get("REVIEWHUB_VAR_DIR", ROOT / "var")) / "test-logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log = open(log_dir / f"{log_name}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log_path = log.name
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


def production_env(database_name: str, redis_url: str, model_url: str, queue: str) -> dict:
    from django.conf import settings

    return {
        "DJANGO_SETTINGS_MODULE": "reviewhub.settings",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database_name}",
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "",
        "CELERY_QUEUE": queue,
        "MODEL_RETRY_BACKOFF": "0.05",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        # Production settings over plain HTTP on 127.0.0.1, with the tests' key: they make the session cookies.
        "SECRET_KEY": settings.SECRET_KEY,
        "REVIEWHUB_INSECURE_HTTP": "1",
    }


def worker_queues(queue: str) -> dict[str, str]:
    """The queues of a deployment whose CELERY_QUEUE is `queue` (named as reviewhub/settings.py names them)."""
    return {"default": queue, "turns": f"{queue}-turns", "tools": f"{queue}-tools"}


def start_worker(
    processes: Processes,
    queue: str,
    concurrency: int = 2,
    *,
    kinds=("default", "turns", "tools"),
    pool: str = "threads",
    log_name: str = "",
    loglevel: str = "warning",
) -> subprocess.Popen:
    """A Celery worker on the named kinds of queue of `queue` (all three by default).

    At loglevel "info" its log says when each task is received and has succeeded."""
    queues = worker_queues(queue)
    return processes.start(
        "-m",
        "celery",
        "-A",
        "reviewhub",
        "worker",
        "-Q",
        ",".join(queues[kind] for kind in kinds),
        "-c",
        str(concurrency),
        "--pool",
        pool,
        "-l",
        loglevel,
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        log_name=log_name or f"worker-{queue}-{'-'.join(kinds)}",
    )


def start_asgi(processes: Processes, port: int) -> subprocess.Popen:
    proc = processes.start(
        "-m",
        "uvicorn",
        "reviewhub.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--lifespan",
        "off",
        log_name=f"asgi-{port}",
    )
    wait_for_http(f"http://127.0.0.1:{port}/login/", process=proc)
    return proc


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium():
    """Debian's Chromium driven by Playwright (Playwright's own browser download is never used)."""
    import pytest

    path = chromium_path()
    if path is None:
        pytest.skip("Debian's chromium is not installed (make test installs it with apt-get).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def sqlite_rows(db: Path, sql: str) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def wait_for_rows(db: Path, sql: str, timeout: float = 20) -> list[tuple]:
    """Poll an SQLite database until the query returns rows; returns them (or [] on time-out)."""
    return wait_for(lambda: sqlite_rows(db, sql), timeout=timeout, interval=0.2) or []


def start_demo(var_dir: Path, log_name: str = "demo", runs: bool = True):
    """Start `manage.py demo` (the embedded default: SQLite, no servers) in var_dir and, with runs,
    wait until its demo runs have put three calls in the queue. Returns (processes, info); stop the processes."""
    port = free_port()
    processes = Processes(
        {
            "DJANGO_SETTINGS_MODULE": "reviewhub.settings",
            "REVIEWHUB_VAR_DIR": str(var_dir),
            "DATABASE_URL": "",
            "REDIS_URL": "",
            "OPENAI_API_KEY": "",
            "OPENAI_BASE_URL": "",
            "SECRET_KEY": "",  # the demo keeps a key of its own in var_dir
            # The browser tests count the demo's calls: no practice call is planted while they run.
            "PRACTICE_PLANT_SECONDS": "86400",
        }
    )
    processes.env.pop("REVIEWHUB_INSECURE_HTTP", None)  # plain HTTP because it is the demo, not by the tests' say
    proc = processes.start(
        "manage.py", "demo", "--port", str(port), *([] if runs else ["--no-runs"]), log_name=log_name
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/login/", timeout=60, process=proc)
        db = var_dir / "reviewhub.sqlite3"
        if runs:
            pending = "select count(*) from approvals_toolcall where status='pending' having count(*) >= 3"
            if not wait_for_rows(db, pending, timeout=60):
                raise TimeoutError(f"the demo runs did not put three calls in the queue; see {proc.log_path}")
    except Exception:
        processes.stop()
        raise
    return processes, {"url": f"http://127.0.0.1:{port}", "db": db}
