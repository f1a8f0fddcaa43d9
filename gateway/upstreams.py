"""Connections to a gateway's upstream MCP servers, with the SDK's own client: opened once per gateway process
and kept open (a read-only call then costs one round trip), a command over stdio or a URL over streamable HTTP."""

import logging
import os
import shlex
import time
from dataclasses import dataclass

import anyio
import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .models import KEPT_FROM_UPSTREAMS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpstreamSpec:
    pk: int
    name: str
    command: str
    url: str
    environment: tuple[tuple[str, str | None], ...] = ()  # (NAME, value), or (NAME, None): the gateway's own


def upstream_environment(spec: UpstreamSpec) -> dict[str, str]:
    """What the entry names, and PATH: a third-party server never sees ReviewHub's key, database or broker.
    (The SDK adds its own few harmless defaults: HOME, LOGNAME, SHELL, TERM, USER.)"""
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    for name, value in spec.environment:
        if value is not None:
            env[name] = value
        elif name not in KEPT_FROM_UPSTREAMS and name in os.environ:
            env[name] = os.environ[name]
    return env


def client_for(spec: UpstreamSpec) -> Client:
    if spec.command:
        command, *args = shlex.split(spec.command)
        return Client(StdioServerParameters(command=command, args=args, env=upstream_environment(spec)))
    return Client(spec.url)


class _Held:
    """One upstream's client, held open by a task of the gateway's own (the SDK's client must be closed by the task
    that opened it); it ends when asked to, or when the connection breaks."""

    def __init__(self, spec: UpstreamSpec):
        self.spec = spec
        self.client: Client | None = None
        self.stop = anyio.Event()

    async def hold(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with client_for(self.spec) as client:
                self.client = client
                task_status.started(self)
                await self.stop.wait()
        except Exception as exc:  # after start, a broken connection must not take the gateway down with it
            if self.client is None:
                raise
            log.warning("MCP upstream %s closed: %s", self.spec.name, exc)
        finally:
            self.client = None


class Upstreams:
    """`async with Upstreams(specs) as upstreams:` each reachable upstream's client, by name. An upstream that was
    unreachable, or whose connection broke (its process died, its server restarted), is connected again on the
    next call to it, at most every RECONNECT_SECONDS."""

    RECONNECT_SECONDS = 2.0

    def __init__(self, specs: list[UpstreamSpec]):
        self.specs = {spec.name: spec for spec in specs}
        self.held: dict[str, _Held] = {}
        self._tried: dict[str, float] = {}
        self._locks = {name: anyio.Lock() for name in self.specs}
        self._group = anyio.create_task_group()

    async def __aenter__(self) -> "Upstreams":
        await self._group.__aenter__()
        for name in self.specs:
            await self._connect(name)
        return self

    async def __aexit__(self, *exc) -> None:
        for held in self.held.values():
            held.stop.set()
        await self._group.__aexit__(*exc)

    async def _connect(self, name: str) -> Client | None:
        self._tried[name] = time.monotonic()
        try:
            held = await self._group.start(_Held(self.specs[name]).hold)
        except Exception as exc:  # one broken upstream must not take the others down; its tools are not listed
            log.warning("MCP upstream %s is not reachable: %s", name, exc)
            return None
        self.held[name] = held
        return held.client

    async def client(self, name: str) -> Client | None:
        """The upstream's open client, connecting again if it has none (not more often than RECONNECT_SECONDS)."""
        held = self.held.get(name)
        if held is not None and held.client is not None:
            return held.client
        if name not in self.specs:
            return None
        async with self._locks[name]:
            held = self.held.get(name)
            if held is not None and held.client is not None:
                return held.client
            if time.monotonic() - self._tried.get(name, float("-inf")) < self.RECONNECT_SECONDS:
                return None
            return await self._connect(name)

    def _drop(self, name: str) -> None:
        held = self.held.pop(name, None)
        if held is not None:
            held.stop.set()
            self._tried.pop(name, None)  # connect again at the next call

    async def listings(self) -> dict[int, list[dict]]:
        """Each reachable upstream's tools (as JSON), by the upstream's pk."""
        found = {}
        for name, spec in self.specs.items():
            client = await self.client(name)
            if client is None:
                continue
            try:
                listed = await client.list_tools()
            except Exception as exc:
                log.warning("MCP upstream %s did not list its tools: %s", name, exc)
                self._drop(name)
                continue
            found[spec.pk] = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
        return found

    async def call(self, upstream: str, tool: str, arguments: dict, *, read_only: bool = False) -> types.CallToolResult:
        """Call a tool once. Only a read-only call is tried a second time, on a fresh connection, when the first
        failed on a broken one: any other may have reached the upstream, and must not run twice."""
        for _attempt in range(2 if read_only else 1):
            client = await self.client(upstream)
            if client is None:
                return error_result(f"The server behind {tool} is not reachable; nothing was done.")
            try:
                return await client.call_tool(tool, arguments)
            except Exception as exc:  # the upstream went away or answered nonsense: the client gets a tool error
                log.warning("MCP upstream %s failed on %s: %s", upstream, tool, exc)
                self._drop(upstream)
                failure = exc
        return error_result(f"The server behind {tool} failed: {failure}")


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
