"""Static files through the ASGI application, whose middleware can all run async."""

import httpx
import pytest

from reviewhub.asgi import application


@pytest.mark.asyncio
async def test_a_static_file_is_served():
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        answer = await http.get("/static/reviewhub/live.js")
    assert answer.status_code == 200 and "javascript" in answer.headers["content-type"]
    assert "htmx" in answer.text


def test_every_middleware_can_run_async():
    """The async chains still serve every async view (runtime/handler.py: the API's, a long-poll; a sync view's
    request takes a sync chain in one hop). One sync-only middleware would make Django run the rest of its chain
    from a thread the request holds to its end (runtime/slots.py: a long-poll could not give its slot back)."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    every = settings.MIDDLEWARE + settings.API_MIDDLEWARE  # the API's: its long-poll is an async view
    assert [path for path in every if not getattr(import_string(path), "async_capable", False)] == []
