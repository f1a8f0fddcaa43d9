"""Django's ASGI handler, with a request to a sync view run through Django's sync middleware chain in one hop to
its request slot's thread (runtime/slots.py), and only a request to an async view (a long-poll) through the
async chain.

Under ASGI Django runs one middleware chain, async: every `MiddlewareMixin` middleware then calls each of its
process_request/process_view/process_response through sync_to_async (django/utils/deprecation.py), a hop to
the slot's thread and back to the event loop for each: 15 hops per request with our MIDDLEWARE, where a sync
chain makes one. In one process, those hops cost ~3.5 ms of CPU per request (a GET of the agent's tools 7.1
ms with the async chain, 3.7 ms in one hop; bench/README.md, issue 26). A sync view gains nothing from the
async chain; an async view needs it, to give its slot back while it waits (which is why every middleware
stays async-capable: tests/reviewhub/test_static_files.py).
"""

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.urls import Resolver404, get_resolver, get_urlconf


def view_is_async(path: str) -> bool:
    """Whether the view at this path is a coroutine function (no view: the sync chain answers the 404)."""
    try:
        return iscoroutinefunction(get_resolver(get_urlconf()).resolve(path).func)
    except Resolver404:
        return False


class Handler(ASGIHandler):
    """An ASGI handler with both chains: the async one (ASGIHandler's) for async views, the sync one for the rest."""

    def __init__(self):
        super().__init__()
        self.sync_handler = BaseHandler()
        self.sync_handler.load_middleware(is_async=False)

    async def get_response_async(self, request):
        if view_is_async(request.path_info):
            return await super().get_response_async(request)
        return await sync_to_async(self.sync_handler.get_response)(request)
