"""The client sends again a request the server could not take now (503 or 429 with Retry-After in seconds: the
API's answer when its database refuses a connection), after that wait and up to half as long again, for up to
busy_timeout seconds; any other error it raises at once."""

import asyncio

import httpx2 as httpx
import pytest
from reviewhub_client import ApiError, AsyncReviewHub, ReviewHub, _api

CALL = {"id": 7, "status": "pending", "tool": "issue_refund", "arguments": {}, "thread_id": "t", "run_id": 1}
BUSY = {"detail": "ReviewHub is busy."}


def answers(*responses):
    """A MockTransport that gives these answers in turn, and the requests it was sent."""
    sent: list[httpx.Request] = []
    queue = list(responses)

    def answer(request):
        sent.append(request)
        return queue.pop(0)

    return httpx.MockTransport(answer), sent


def propose(client):
    return client.propose(thread_id="t", tool="issue_refund", arguments={}, idempotency_key="k-1")


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits the client asked for (each Retry-After), without sleeping them."""
    asked: list[float] = []
    monkeypatch.setattr(_api, "busy_wait", lambda seconds: asked.append(seconds) or 0.0)
    return asked


def test_a_proposal_turned_away_is_sent_again_after_the_wait_asked(waits):
    busy = httpx.Response(503, json=BUSY, headers={"Retry-After": "3"})
    transport, sent = answers(busy, httpx.Response(429, headers={"Retry-After": "1"}), httpx.Response(201, json=CALL))
    with ReviewHub("http://hub.test", "rh_x", transport=transport) as client:
        call = propose(client)
    assert call.id == 7 and waits == [3.0, 1.0] and len(sent) == 3
    assert sent[0].content == sent[2].content  # the same proposal, the same idempotency key


def test_an_error_without_retry_after_is_raised_at_once(waits):
    transport, sent = answers(httpx.Response(503, json={"detail": "down"}), httpx.Response(201, json=CALL))
    with ReviewHub("http://hub.test", "rh_x", transport=transport) as client, pytest.raises(ApiError) as raised:
        propose(client)
    assert raised.value.status == 503 and raised.value.retry_after is None and len(sent) == 1 and waits == []


def test_a_date_in_retry_after_asks_nothing():
    response = httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})
    assert _api.retry_after(response) is None
    assert _api.retry_after(httpx.Response(500, headers={"Retry-After": "2"})) is None


def test_past_busy_timeout_the_last_answer_is_raised(monkeypatch):
    monkeypatch.setattr(_api, "busy_wait", lambda seconds: 0.05)
    transport, sent = answers(*[httpx.Response(503, json=BUSY, headers={"Retry-After": "1"})] * 100)
    with ReviewHub("http://hub.test", "rh_x", busy_timeout=0.2, transport=transport) as client:
        with pytest.raises(ApiError) as raised:
            propose(client)
    assert raised.value.status == 503 and raised.value.retry_after == 1.0
    assert 2 <= len(sent) < 100


def test_the_wait_is_retry_after_and_up_to_half_as_long_again():
    seen = [_api.busy_wait(2.0) for _ in range(200)]
    assert all(2.0 <= wait <= 3.0 for wait in seen) and max(seen) - min(seen) > 0.2


def test_the_async_client_sends_it_again_too(waits):
    busy = httpx.Response(503, json=BUSY, headers={"Retry-After": "2"})
    transport, sent = answers(busy, httpx.Response(201, json=CALL))

    async def main():
        async with AsyncReviewHub("http://hub.test", "rh_x", transport=transport) as client:
            return await client.propose(thread_id="t", tool="issue_refund", arguments={}, idempotency_key="k-1")

    assert asyncio.run(main()).id == 7 and waits == [2.0] and len(sent) == 2


@pytest.mark.django_db(transaction=True)
def test_a_proposal_the_database_refused_once_is_sent_again_and_is_one_call(monkeypatch):
    """End to end: the API answers a refused connection 503 with Retry-After (remote/http.py) and the client's
    second send, after the wait, is the proposal."""
    from asgiref.sync import sync_to_async
    from django.db import OperationalError, connections

    from approvals.models import ToolCall
    from remote import services
    from remote.services import agent_get_or_create
    from remote.tokens import token_create
    from reviewhub.asgi import application
    from runtime import slots

    propose, refused = services.call_propose, []

    def refused_once(**kwargs):
        if not refused:
            refused.append(True)
            raise OperationalError("connection failed: FATAL:  sorry, too many clients already")
        return propose(**kwargs)

    monkeypatch.setattr(services, "call_propose", refused_once)
    waits: list[float] = []
    monkeypatch.setattr(_api, "busy_wait", lambda seconds: waits.append(seconds) or 0.01)
    token = token_create(agent=agent_get_or_create(name="refused-once")[0])[1]
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}

    async def main():
        transport = httpx.ASGITransport(app=application)
        try:
            async with AsyncReviewHub("http://testserver", token, transport=transport) as hub:
                await hub.declare_tool("issue_refund", input_schema=schema)
                return await hub.propose(
                    thread_id="t-1", tool="issue_refund", arguments={"order_id": "A-1"}, idempotency_key="k-1"
                )
        finally:
            await slots.close_connections()
            await sync_to_async(connections.close_all)()

    call = asyncio.run(main())
    assert refused and waits == [1.0] and call.status == "pending"
    assert ToolCall.objects.filter(pk=call.id).count() == 1
