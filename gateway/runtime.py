"""One gateway in one process (its upstream connections and the tools it lists), and how its async handlers
reach the ORM: what gateway/server.py and gateway/reviewed.py both stand on."""

import time
import uuid
from functools import wraps

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from . import services
from .upstreams import Upstreams


def _fresh(fn):
    @wraps(fn)
    def call(**kwargs):
        close_old_connections()  # a gateway lives for days: never use a connection the database dropped
        return fn(**kwargs)

    return call


async def db(fn, **kwargs):
    """Run an ORM function of ours from the event loop."""
    return await sync_to_async(_fresh(fn))(**kwargs)


class Runtime:
    """One gateway in one process: its upstream connections and the tools it lists (re-read every few seconds)."""

    def __init__(self, gateway, upstreams: Upstreams):
        self.gateway = gateway
        self.upstreams = upstreams
        self._catalog: dict[str, services.Entry] = {}
        self._loaded = float("-inf")
        self.started = uuid.uuid4().hex[:12]  # names the thread of a client without a session of its own (stdio)

    async def sync(self) -> None:
        """Store what the upstreams list now, declared for the gateway's agent."""
        listings = await self.upstreams.listings()
        await db(services.tools_sync, gateway=self.gateway, listings=listings)
        self._loaded = float("-inf")

    async def catalog(self, *, fresh: bool = False) -> dict[str, services.Entry]:
        if fresh or time.monotonic() - self._loaded > settings.REVIEWHUB_MCP_CATALOG_SECONDS:
            self.gateway = await db(services.gateway_get, name=self.gateway.name)  # its settings as the admin has them
            self._catalog = await db(services.catalog, gateway=self.gateway)
            self._loaded = time.monotonic()
        return self._catalog
