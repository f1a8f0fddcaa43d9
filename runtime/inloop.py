"""The agent API's middleware (settings.API_MIDDLEWARE) for its async chain: the long-poll's (runtime/handler.py).

In an async chain Django's `MiddlewareMixin` calls each process_request and process_response through
sync_to_async: a hop to the request's slot thread and back to the event loop for each (runtime/slots.py), seven
for these four, and each waits for that slot. Their hooks only read the request and the settings and set headers
(the Host check, the HTTPS and slash redirects, HSTS, nosniff, X-Frame-Options, the Content-Security-Policy):
they touch no database and block on nothing, so here they run in the event loop, as the same classes' code.
A long-poll told its answer by the decision (remote/api.py) then needs no slot to answer.
"""

from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csp import ContentSecurityPolicyMiddleware
from django.middleware.security import SecurityMiddleware


class InLoop:
    """Before a `MiddlewareMixin` middleware: its hooks called in the event loop in an async chain."""

    async def __acall__(self, request):
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)  # type: ignore[attr-defined]
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class Security(InLoop, SecurityMiddleware):
    pass


class Common(InLoop, CommonMiddleware):
    pass


class XFrameOptions(InLoop, XFrameOptionsMiddleware):
    pass


class ContentSecurityPolicy(InLoop, ContentSecurityPolicyMiddleware):
    pass


IN_LOOP = {
    "django.middleware.security.SecurityMiddleware": "runtime.inloop.Security",
    "django.middleware.common.CommonMiddleware": "runtime.inloop.Common",
    "django.middleware.clickjacking.XFrameOptionsMiddleware": "runtime.inloop.XFrameOptions",
    "django.middleware.csp.ContentSecurityPolicyMiddleware": "runtime.inloop.ContentSecurityPolicy",
}


def in_loop(middleware: list[str]) -> list[str]:
    """This middleware list with the ones above run in the event loop (any other as it is)."""
    return [IN_LOOP.get(path, path) for path in middleware]
