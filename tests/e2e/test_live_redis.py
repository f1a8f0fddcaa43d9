"""On the Redis channel layer: two ASGI processes behind one Redis both deliver
every push, and a socket left idle stays open (the redis-py 8 timeout fix)."""

import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from approvals import services
from runtime.layers import redis_channel_layer
from tests.livestack import queue_socket, receive_call, session_cookie
from tests.reviewing import propose
from tests.stack import Processes, free_port, production_env, redis_available, start_asgi

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis]

IDLE_SECONDS = 12  # longer than redis-py 8's default socket timeout (5 s), and than 10 s


@pytest.fixture
def redis_layer(settings):
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: this test needs it.")
    # This process sends its hints through Redis too, as a Celery worker does.
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(django_settings.REDIS_TEST_URL)}


@pytest.fixture
def two_servers(require_postgres, redis_layer):
    env = production_env(
        connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, "http://127.0.0.1:9/v1", "unused"
    )
    processes = Processes(env)
    urls = []
    for _ in range(2):
        port = free_port()
        start_asgi(processes, port)
        urls.append(f"http://127.0.0.1:{port}")
    yield urls, processes
    processes.stop()


def test_two_asgi_processes_both_deliver_every_push_after_an_idle_gap(two_servers, run, reviewer, reviewer2):
    (first, second), processes = two_servers
    with queue_socket(first, session_cookie(reviewer)) as alice, queue_socket(second, session_cookie(reviewer2)) as bob:
        time.sleep(IDLE_SECONDS)

        call = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 45, "reason": "Broken"})

        for socket in (alice, bob):
            push = receive_call(socket, call.pk)
            assert push["pending"] is True and push["count"] == 1

        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
        for socket in (alice, bob):
            push = receive_call(socket, call.pk)
            assert push["pending"] is False and push["toast"].startswith("Approved by alice: ")

    for proc in processes.procs:
        log = Path(proc.log_path).read_text()
        assert "Timeout reading" not in log and "Traceback" not in log, log
