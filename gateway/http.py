"""The gateway over streamable HTTP, mounted in the ASGI application at /mcp/NAME/.

Each request carries a token of the gateway's agent (`Authorization: Bearer rh_…`, made with
`manage.py create_agent_token NAME`); anything else is a 401 and reaches no MCP code. One SDK session manager per
gateway and process, started by the first request (it opens the upstreams once and keeps them), serves its
sessions; a session answers only to the credential that opened it (the SDK checks).

Before any of that, the doors every entry point has: a Host outside ALLOWED_HOSTS is a 400 (as Django answers),
an Origin that is not the site's own or in CSRF_TRUSTED_ORIGINS a 403 (approvals/lib/origins.py); the SDK's own
DNS-rebinding check (its transport security settings) is given the same hosts and origins where its exact
matching can say them.
"""

import asyncio
import json
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from approvals import access
from approvals.lib import origins
from remote.services import SHOWN, agent_for_token

from .models import Gateway
from .server import gateway_server

log = logging.getLogger(__name__)
PREFIX = "/mcp/"

_managers: dict[str, tuple[StreamableHTTPSessionManager, asyncio.Event]] = {}


def _credential(*, name: str, token: str) -> str | None:
    """The token's prefix if it is a live token of the agent of gateway NAME; else None."""
    close_old_connections()
    agent = agent_for_token(token)
    if agent is None or not access.agent_gateways(agent.user, Gateway.objects.filter(agent__name=name)).exists():
        return None
    return token[:SHOWN]


async def _refuse(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="reviewhub-mcp"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def transport_security() -> TransportSecuritySettings:
    """The SDK's Host and Origin check, with Django's ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS. Django's wildcards
    ("*", ".example.com", "https://*.example.com") have no equal in the SDK's exact lists: with one of them,
    the check in front (approvals/lib/origins.py) is the only one."""
    hosts, trusted = origins.allowed_hosts(), settings.CSRF_TRUSTED_ORIGINS
    if any(host == "*" or host.startswith(".") for host in hosts) or any("*" in origin for origin in trusted):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    own = [f"{scheme}://{host}{port}" for host in hosts for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        allowed_hosts=[*hosts, *(f"{host}:*" for host in hosts)], allowed_origins=[*own, *trusted]
    )


async def _manager(name: str) -> StreamableHTTPSessionManager:
    """The running session manager of gateway NAME in this process (started on first use)."""
    found = _managers.get(name)
    if found is None:
        manager, ready = (
            StreamableHTTPSessionManager(app=gateway_server(name), security_settings=transport_security()),
            asyncio.Event(),
        )
        _managers[name] = found = (manager, ready)

        async def hold() -> None:
            try:
                async with manager.run():
                    ready.set()
                    await asyncio.Event().wait()  # for the life of the process
            except Exception:
                log.exception("the MCP gateway %s stopped", name)
            finally:
                _managers.pop(name, None)  # the next request starts it afresh
                ready.set()

        asyncio.get_running_loop().create_task(hold())
    manager, ready = found
    await ready.wait()
    if _managers.get(name) is not found:
        raise RuntimeError(f"the MCP gateway {name} could not start")
    return manager


def _bearer(scope) -> str:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


async def mcp_app(scope, receive, send) -> None:
    if not origins.host_allowed(scope):
        await _refuse(send, 400, "Bad Request: this host is not one this site serves (ALLOWED_HOSTS).")
        return
    if not origins.http_origin_allowed(scope):
        await _refuse(send, 403, "Forbidden: requests from this origin are refused (CSRF_TRUSTED_ORIGINS).")
        return
    name = scope["path"][len(PREFIX) :].strip("/").partition("/")[0]
    token = _bearer(scope)
    credential = await sync_to_async(_credential)(name=name, token=token) if name and token else None
    if credential is None:
        await _refuse(send, 401, "A token of this gateway's agent is required: Authorization: Bearer rh_…")
        return
    try:
        manager = await _manager(name)
    except RuntimeError as exc:
        await _refuse(send, 503, f"{exc}; see the server's log.")
        return
    user = AuthenticatedUser(AccessToken(token=credential, client_id=credential, scopes=[]))
    scope = dict(scope, user=user, reviewhub_token_prefix=credential)
    await manager.handle_request(scope, receive, send)


def with_mcp(app):
    """The ASGI application with the gateways mounted at /mcp/NAME/ (HTTP only; the rest goes to `app`)."""

    async def router(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            await mcp_app(scope, receive, send)
        else:
            await app(scope, receive, send)

    return router
