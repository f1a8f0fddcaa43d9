"""Helpers for the MCP gateway's tests: a gateway in front of the example shop, the SDK's own client in a
thread of its own (the test's thread stays free to review), and the shop's refunds counted in its SQLite file."""

import asyncio
import shlex
import sqlite3
import sys
import threading
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from mcp import Client

from gateway import services
from gateway.models import Upstream, UpstreamTool

ROOT = Path(__file__).resolve().parents[2]
SHOP_SERVER = ROOT / "examples" / "mcp_shop_server.py"
REFUND_TEMPLATE = "Refund ${amount} on order {order_id}"


def gateway_env(tmp_path: Path) -> dict:
    """What a gateway process of a test needs: the test database, the shop's file, short waits."""
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": url,
        "SHOP_DB": str(tmp_path / "shop.sqlite3"),
        "REVIEWHUB_WAIT_RECHECK_SECONDS": "0.2",
        "REVIEWHUB_MCP_PROGRESS_SECONDS": "0.3",
        "REVIEWHUB_MCP_CATALOG_SECONDS": "0",
    }


def shop_gateway(name: str, *, command: str = "", url: str = "", answer_after: int = 60):
    """A gateway NAME whose upstream is the example shop: close_account forbidden; refund described by a
    template, with get_balance's answer as facts."""
    gateway = services.gateway_create(name=name)
    gateway.answer_after_seconds = answer_after
    gateway.save()
    command = command or f"{shlex.quote(sys.executable)} {shlex.quote(str(SHOP_SERVER))}"
    upstream = Upstream.objects.create(
        gateway=gateway, name="shop", command="" if url else command, url=url, environment="SHOP_DB"
    )
    UpstreamTool.objects.create(upstream=upstream, name="close_account", setting=UpstreamTool.Setting.FORBIDDEN)
    UpstreamTool.objects.create(
        upstream=upstream, name="refund", description_template=REFUND_TEMPLATE, facts_tool="get_balance"
    )
    return gateway


def refunds(tmp_path: Path) -> list[tuple]:
    path = tmp_path / "shop.sqlite3"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS refunds (order_id TEXT, amount REAL, reason TEXT)")
        return db.execute("SELECT order_id, amount FROM refunds").fetchall()


class McpClient:
    """`with McpClient(server) as mcp:` the SDK's Client connected to `server`, served by a loop in a thread."""

    def __init__(self, server, **options):
        self.server, self.options = server, options
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.progress: list[str] = []

    def __enter__(self) -> "McpClient":
        self.thread.start()
        self._ready = threading.Event()
        self._stop = asyncio.Event()
        self._session = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        if not self._ready.wait(60):
            self._session.result(1)  # raises what kept it from connecting
            raise TimeoutError("the MCP client did not connect within 60 s")
        return self

    async def _hold(self) -> None:
        async with Client(self.server, **self.options) as client:
            self.client = client
            self._ready.set()
            await self._stop.wait()

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._session.result(30)
            # A gateway served in this process used the database from asgiref's thread: close that connection,
            # or it would keep the test database from being dropped.
            self.run(sync_to_async(connections.close_all)())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def run(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def list_tools(self):
        return self.run(self.client.list_tools()).tools

    def call_tool(self, name: str, arguments: dict, timeout: float = 60):
        return self.run(self.client.call_tool(name, arguments, progress_callback=self._heard), timeout)

    def call_tool_later(self, name: str, arguments: dict, heard: list | None = None, meta: dict | None = None):
        """A call that goes on while the test reviews it: a concurrent.futures.Future of its result. `heard`, when
        given, collects this call's own progress messages (the gateway is waiting on it once there is one)."""

        async def collect(progress, total, message) -> None:
            await self._heard(progress, total, message)
            if heard is not None:
                heard.append(message or "")

        return asyncio.run_coroutine_threadsafe(
            self.client.call_tool(name, arguments, progress_callback=collect, meta=meta), self.loop
        )

    async def _heard(self, progress, total, message) -> None:
        self.progress.append(message or "")


def http_transport(url: str, token: str = "", **options) -> Client:
    """The SDK's client over streamable HTTP with this bearer token (long reads: a reviewed call waits)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    return streamable_http_client(url, http_client=http)


def shop_processes(tmp_path: Path) -> list[int]:
    """The pids of the example shop servers serving this test's shop file (a gateway's stdio upstreams)."""
    wanted = f"SHOP_DB={tmp_path / 'shop.sqlite3'}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if b"mcp_shop_server.py" in (proc / "cmdline").read_bytes() and wanted in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found
