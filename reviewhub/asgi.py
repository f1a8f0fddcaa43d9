import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application() does

from runtime.handler import Handler  # noqa: E402

django_asgi_app = Handler()  # a sync view's request in one hop, an async view's through the async chain

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from approvals.lib.origins import SameOriginValidator  # noqa: E402
from approvals.live import remember_loop  # noqa: E402
from approvals.live.routing import websocket_urlpatterns  # noqa: E402
from gateway.http import with_mcp  # noqa: E402
from runtime.slots import limited  # noqa: E402

websocket_router = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]  # stubs: a pattern type path() never makes
application = ProtocolTypeRouter(
    {
        "http": with_mcp(limited(django_asgi_app)),  # the MCP gateways at /mcp/NAME/, the rest Django's, N at once
        "websocket": SameOriginValidator(AuthMiddlewareStack(websocket_router)),
    }
)
application = remember_loop(application)

# What is loaded by now lives as long as the process: keep it out of the cyclic
# garbage collector's full passes, which otherwise stop the event loop (and every
# live push in flight) for tens of milliseconds every few seconds of busy pushing.
gc.freeze()
