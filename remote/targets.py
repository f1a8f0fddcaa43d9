"""Webhook targets, checked like any fetch the server makes on someone else's behalf.

The host is resolved and every address checked: by default only public (global) addresses;
REVIEWHUB_WEBHOOK_ALLOW_PRIVATE allows loopback and private ones (tests, one machine). Cloud
metadata, unspecified and multicast addresses are never allowed. The request then goes to the
address that was checked (the name sent as Host and for TLS), so a second DNS answer cannot
point it elsewhere; redirects are not followed; the timeout is short.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "168.63.129.16", "100.100.100.200")}


class TargetRefused(Exception):
    pass


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    address: str
    path: str

    @property
    def url(self) -> str:
        """The checked address, for the connection; Host and TLS use `host`."""
        address = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.scheme}://{address}:{self.port}{self.path}"

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def address_problem(address: str, allow_private: bool) -> str:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA or ip.is_unspecified or ip.is_multicast:
        return f"{ip} is a metadata, unspecified or multicast address"
    if not allow_private and not ip.is_global:
        return f"{ip} is a loopback, private, link-local or otherwise non-public address"
    return ""


def url_problem(url: str) -> str:
    """What is wrong with a webhook URL before any lookup ("" when nothing)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        return f"Not a valid URL: {exc}."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "Use an http:// or https:// URL with a host name."
    if parts.username or parts.password:
        return "No user name or password in the URL; the signature authenticates the request."
    return ""


def resolve(url: str, *, allow_private: bool | None = None) -> Target:
    """Check a URL and every address of its host; the first address to use. Raises TargetRefused."""
    allow = settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private
    problem = url_problem(url)
    if problem:
        raise TargetRefused(problem)
    parts = urlsplit(url)
    host = parts.hostname
    if host is None:  # url_problem refused it already
        raise TargetRefused("The URL has no host.")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"{host} could not be resolved ({exc}).")
    # An IPv4 or IPv6 address as text (a socket address's first item: an int only for families not asked for).
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:
        if problem := address_problem(address, allow):
            raise TargetRefused(f"{host} resolves to {problem}; refused.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port, addresses[0], path)
