import io
import os
import socket
import urllib.request

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.management import call_command
from django.db import connection
from reviewhub_client import ReviewHub

from tests.stack import Processes, free_port, production_env, start_asgi, wait_for_http

from . import fakehub


@pytest.fixture
def hub():
    """The stand-in of the agent API (fakehub.py)."""
    server = fakehub.serve()
    yield server
    server.shutdown()


@pytest.fixture
def client(hub):
    """The Python client against the stand-in, with the refund tool declared (in this folder, in place of
    pytest-django's test client, which no test here uses)."""
    with ReviewHub(hub.url, fakehub.TOKEN) as client:
        client.declare_tool("issue_refund", input_schema=fakehub.SCHEMA, description="Refund an order.")
        yield client


def ports() -> list[int]:
    """Ports to start servers on: REVIEWHUB_TEST_PORTS ("first-last") when set, else any free ones."""
    span = os.environ.get("REVIEWHUB_TEST_PORTS", "")
    if not span:
        return [free_port(), free_port()]
    first, last = (int(part) for part in span.split("-"))
    free = []
    for port in range(first, last + 1):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                free.append(port)
        if len(free) == 2:
            return free
    raise RuntimeError(f"no two free ports in {span}")


@pytest.fixture(scope="module")
def servers(request, django_db_setup):
    """ReviewHub (uvicorn, production settings, embedded: no Celery) and the scripted model, as processes, on the
    test database; webhooks may go to a receiver on 127.0.0.1, and the test module's SERVER_ENV adds to their
    environment."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable: the server under test shares the test database.")
    model_port, hub_port = ports()
    model_url = f"http://127.0.0.1:{model_port}/v1"
    env = production_env(connection.settings_dict["NAME"], "", model_url, "unused")
    env |= {"REVIEWHUB_WEBHOOK_ALLOW_PRIVATE": "1"} | getattr(request.module, "SERVER_ENV", {})
    processes = Processes(env)
    name = request.module.__name__.rpartition(".")[2]
    try:
        model = processes.start("manage.py", "model_server", "--port", str(model_port), log_name=f"model-{name}")
        wait_for_http(model_url + "/models", process=model)
        start_asgi(processes, hub_port)
        yield {"hub": f"http://127.0.0.1:{hub_port}", "model": model_url}
    finally:
        processes.stop()


@pytest.fixture
def fresh_model(servers):
    """The model server's record of requests starts empty for each test."""
    reset = urllib.request.Request(servers["model"].removesuffix("/v1") + "/_reset", data=b"{}", method="POST")
    urllib.request.urlopen(reset, timeout=10).close()


@pytest.fixture
def token(servers) -> str:
    """A token of the agent "support-bot", made as the README says (manage.py create_agent_token)."""
    out = io.StringIO()
    call_command("create_agent_token", "support-bot", stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


@pytest.fixture
def alice(reviewer):
    """alice, with her password hashed as the servers' production settings hash it, so that she can log in there."""
    hasher = PBKDF2PasswordHasher()
    reviewer.password = hasher.encode("pw-alice", hasher.salt())
    reviewer.save(update_fields=["password"])
    return reviewer
