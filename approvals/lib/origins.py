"""Sockets are opened only by pages of this site: the Origin header must be the
site's own scheme, host and port, as Django's CSRF check asks of a POST. The
ASGI entry points Django does not serve (the MCP gateway at /mcp/) ask here too:
a Host outside ALLOWED_HOSTS is refused as Django refuses it, and an Origin, when a
browser sends one, must be the site's own or a trusted one (DNS rebinding).

A socket opened on Host h with scheme ws (or wss) is accepted from the origin
http://h (or https://h), when h is one of ALLOWED_HOSTS, and from any origin in
CSRF_TRUSTED_ORIGINS (with its "https://*.example.com" wildcards). Behind a
proxy that ends TLS, the ASGI server must pass the original scheme on (uvicorn
--proxy-headers), or the public origin must be in CSRF_TRUSTED_ORIGINS.
"""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

WEB_SCHEME = {"ws": "http", "wss": "https"}
DEFAULT_PORT = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin such as "https://example.com:8443"; None if it is not one."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORT.get(parts.scheme)
    except ValueError:
        return None
    if port is None or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port


def _headers(scope, name: bytes) -> list[str]:
    return [value.decode("latin1") for key, value in scope.get("headers", []) if key == name]


def _header(scope, name: bytes) -> str:
    values = _headers(scope, name)
    return values[0] if len(values) == 1 else ""


def allowed_hosts() -> list[str]:
    """ALLOWED_HOSTS as Django reads it (with DEBUG and none set: the local names)."""
    return settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])


def host_allowed(scope) -> bool:
    """Whether the request's Host is one this site serves, by Django's rules (ALLOWED_HOSTS)."""
    domain, _ = split_domain_port(_header(scope, b"host"))
    return bool(domain) and validate_host(domain, allowed_hosts())


def _served_origin(scope) -> tuple[str, str, int] | None:
    """The origin of the page that may open this socket: its Host, if the site serves that host."""
    if not host_allowed(scope):
        return None
    scheme = scope.get("scheme", "ws")
    return _origin(f"{WEB_SCHEME.get(scheme, scheme)}://{_header(scope, b'host')}")


def _trusted(origin: str) -> bool:
    parts = urlsplit(origin)
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in trusted:
            wildcard = urlsplit(trusted)
            if parts.scheme == wildcard.scheme and is_same_domain(parts.netloc, wildcard.netloc.lstrip("*")):
                return True
        elif _origin(trusted) == _origin(origin):
            return True
    return False


def origin_allowed(scope) -> bool:
    origin = _header(scope, b"origin")
    if not _origin(origin):
        return False
    return _origin(origin) == _served_origin(scope) or _trusted(origin)


def http_origin_allowed(scope) -> bool:
    """An HTTP request: without an Origin (not sent from a browser's page), or from this site or a trusted one."""
    origins = _headers(scope, b"origin")
    return not origins or (len(origins) == 1 and origin_allowed(scope))


class SameOriginValidator:
    """ASGI middleware for sockets: refuse, before it opens, a socket whose Origin is not this site's."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
