"""Django's ASGI handler, with a request to a sync view run through Django's sync middleware chain in one hop to
its request slot's thread (runtime/slots.py), only a request to an async view (a long-poll) through the async
chain, and a request to the agent API (under /api/) through the API's own middleware (settings.API_MIDDLEWARE).

Under ASGI Django runs one middleware chain, async: every `MiddlewareMixin` middleware then calls each of its
process_request/process_view/process_response through sync_to_async (django/utils/deprecation.py), a hop to
the slot's thread and back to the event loop for each: 15 hops per request with our MIDDLEWARE, where a sync
chain makes one. In one process, those hops cost ~3.5 ms of CPU per request (a GET of the agent's tools 7.1
ms with the async chain, 3.7 ms in one hop; bench/README.md, issue 26). A sync view gains nothing from the
async chain; an async view needs it, to give its slot back while it waits (which is why every middleware
stays async-capable: tests/reviewhub/test_static_files.py).

The agent API is authenticated by its bearer token alone (remote/http.py; who may see or do what is
approvals.access's, as everywhere), so most of the site's middleware does nothing for it but cost: the
long-poll, an async view, paid ~15 hops through it. API_MIDDLEWARE keeps what applies to a bearer-token JSON
API: SecurityMiddleware (HSTS, nosniff, referrer and opener policies, the HTTPS redirect), CommonMiddleware
(the Host check against ALLOWED_HOSTS, disallowed user agents, the slash redirect, Content-Length: the same
answers as before), X-Frame-Options and the Content-Security-Policy (the API's Swagger page is HTML). Left out:

- sessions and authentication: the API never reads request.session or request.user; without them a session
  cookie sent to the API cannot authenticate anything, not even by a mistake in a later view (it would fail
  with an error, not as the cookie's user). It never did: TokenAuth reads the Authorization header only.
- CSRF: it guards requests a browser authenticates by a cookie it attaches on its own; the API's views are
  csrf_exempt (django-ninja's: the token is in a header no other site can make a browser send), and no view
  under /api/ asks for a CSRF token, so CsrfViewMiddleware neither checked nor set anything there.
- messages and django-htmx: no API view shows a message or answers htmx.
- static files: nothing under /api/ is one (STATIC_URL is /static/).

Only the agent API lives under /api/ (reviewhub/urls.py; tests/runtime/test_handler.py holds it so).
"""

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.test.utils import override_settings
from django.urls import Resolver404, get_resolver, get_urlconf

from runtime.inloop import in_loop

API_PREFIX = "/api/"


def view_is_async(path: str) -> bool:
    """Whether the view at this path is a coroutine function (no view: the sync chain answers the 404)."""
    try:
        return iscoroutinefunction(get_resolver(get_urlconf()).resolve(path).func)
    except Resolver404:
        return False


def chain(middleware: list[str], *, is_async: bool) -> BaseHandler:
    """A handler running this middleware. Django's loader reads its list from settings.MIDDLEWARE and nowhere
    else: the setting is changed for the load only, when the process starts, before any request."""
    handler = BaseHandler()
    with override_settings(MIDDLEWARE=middleware):
        handler.load_middleware(is_async=is_async)
    return handler


class Handler(ASGIHandler):
    """An ASGI handler with both chains for the site (the async one ASGIHandler's) and both for the API."""

    def __init__(self):
        super().__init__()
        self.sync_handler = chain(settings.MIDDLEWARE, is_async=False)
        self.api_sync_handler = chain(settings.API_MIDDLEWARE, is_async=False)
        self.api_async_handler = chain(in_loop(settings.API_MIDDLEWARE), is_async=True)  # runtime/inloop.py

    async def get_response_async(self, request):
        path = request.path_info
        api = path.startswith(API_PREFIX)
        if view_is_async(path):
            if api:
                return await self.api_async_handler.get_response_async(request)
            return await super().get_response_async(request)
        handler = self.api_sync_handler if api else self.sync_handler
        return await sync_to_async(handler.get_response)(request)
