"""The Redis channel layer (runtime/layers.py): a hint is one Redis command, and a listener hears hints again
after Redis drops its connections."""

import asyncio
import contextlib
import time
import uuid

import pytest
import redis
from channels.layers import get_channel_layer
from django.conf import settings as django_settings

from approvals import live
from runtime.layers import redis_channel_layer
from tests.stack import redis_available

NAME = f"test-layers-{uuid.uuid4().hex[:8]}"

pytestmark = [pytest.mark.asyncio, pytest.mark.redis]


@pytest.fixture
def layer(settings):
    url = django_settings.REDIS_TEST_URL
    if not redis_available(url):
        pytest.skip(f"Redis is not reachable at {url}: these tests need it.")
    config = redis_channel_layer(url)
    config["CONFIG"]["hosts"][0]["client_name"] = NAME  # so that only its connections are dropped
    settings.CHANNEL_LAYERS = {"default": config}
    return get_channel_layer()


def drop_connections() -> list[str]:
    """Redis ends this test's layer's connections (no one else's): the kinds of those it ended."""
    server = redis.Redis.from_url(django_settings.REDIS_TEST_URL)
    ours = [client for client in server.client_list() if client["name"] == NAME]
    for client in ours:
        server.client_kill_filter(_id=client["id"])
    return sorted("pubsub" if int(client["sub"]) else "normal" for client in ours)


async def listening(layer, group: str) -> str:
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def commands_sent(monkeypatch, send) -> list[str]:
    """The Redis commands this process sends while send() runs."""
    sent: list[str] = []
    original = redis.asyncio.client.Redis.execute_command

    async def counted(self, *args, **options):
        sent.append(str(args[0]))
        return await original(self, *args, **options)

    monkeypatch.setattr(redis.asyncio.client.Redis, "execute_command", counted)
    await send()
    monkeypatch.setattr(redis.asyncio.client.Redis, "execute_command", original)
    return sent


async def test_a_hint_to_a_group_is_one_publish(layer, monkeypatch):
    channel = await listening(layer, live.QUEUE_GROUP)

    async def hint():
        live.send(live.QUEUE_GROUP, {"type": "call.changed", "call_id": 7})
        assert (await asyncio.wait_for(layer.receive(channel), 10))["call_id"] == 7

    assert await commands_sent(monkeypatch, hint) == ["PUBLISH"]


async def test_a_hint_to_a_group_nobody_listens_to_is_one_publish_too(layer, monkeypatch):
    await listening(layer, live.QUEUE_GROUP)  # the layer's connections are open

    async def hint():
        await layer.group_send(live.run_group(99), {"type": "run.changed", "run_id": 99})

    assert await commands_sent(monkeypatch, hint) == ["PUBLISH"]


async def test_a_listener_hears_hints_again_after_redis_drops_its_connections(layer):
    channel = await listening(layer, live.QUEUE_GROUP)
    await layer.group_send(live.QUEUE_GROUP, {"type": "call.changed", "call_id": 1})
    assert (await asyncio.wait_for(layer.receive(channel), 10))["call_id"] == 1
    assert drop_connections() == ["normal", "pubsub"]  # the publishing one and the subscription's

    heard = None
    deadline = time.monotonic() + 30
    while heard is None and time.monotonic() < deadline:
        # A hint sent while a connection is down is lost, as a hint may be: send until one is heard.
        with contextlib.suppress(redis.ConnectionError):
            await layer.group_send(live.QUEUE_GROUP, {"type": "call.changed", "call_id": 2})
        with contextlib.suppress(TimeoutError):
            heard = await asyncio.wait_for(layer.receive(channel), 0.5)
    assert heard is not None and heard["call_id"] == 2
