import json
import urllib.request

import pytest
from django.db import connection, connections

from agents import loop, model_server
from approvals import services
from approvals.models import Message, Run
from runtime import background
from shop import demo_data
from tests import stack, support
from tests.agentapi import agent, caller, hooked, other_agent, receiver, refund_agent  # noqa: F401 (the agent API's fixtures)
from tests.ops.slack_standin import alice_in_slack, chat_refunds, slack  # noqa: F401 (the Slack tests' fixtures)


class ScriptedModel:
    """The shipped model server, reached over HTTP; tests may queue exact replies."""

    def __init__(self, server: model_server.ModelServer):
        self.server = server
        self.url = server.url

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            self.url.removesuffix("/v1") + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def script(self, *replies: dict) -> None:
        self._post("/_script", {"replies": list(replies)})

    def reset(self) -> None:
        self._post("/_reset", {})

    def requests(self) -> list[dict]:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/_requests", timeout=5) as response:
            return json.loads(response.read())


@pytest.fixture(scope="session")
def model_server_instance():
    server = model_server.serve(port=0)
    yield server
    server.shutdown()


@pytest.fixture
def model(model_server_instance, settings):
    scripted = ScriptedModel(model_server_instance)
    scripted.reset()
    settings.OPENAI_BASE_URL = scripted.url
    yield scripted
    scripted.reset()


@pytest.fixture
def background_inline(monkeypatch):
    """What background() would hand to a thread of the embedded default runs at once in the test's own thread
    (still after the commit)."""
    monkeypatch.setattr(background, "_in_thread", lambda task, args, pool, threads: task.run(*args))


@pytest.fixture(autouse=True)
def _background_settled_before_teardown(request):
    """A transactional test's tables are emptied (TRUNCATE) at its end: the tasks it handed to the embedded
    default's threads (notifications, webhooks) finish first, or one still reading deadlocks with the TRUNCATE."""
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )
    if transactional:
        request.getfixturevalue("transactional_db")  # set up before this fixture, so torn down after it
    yield
    if transactional:
        background.wait_idle(timeout=30)


@pytest.fixture(autouse=True)
def _clear_resumes():
    support.resumed.clear()
    yield
    support.resumed.clear()


@pytest.fixture
def shop(db):
    demo_data.seed_shop()


@pytest.fixture
def roles(db):
    demo_data.setup_roles()


def _user(django_user_model, username, *groups, **fields):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password="pw-" + username, **fields)
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def reviewer(roles, django_user_model):
    return _user(django_user_model, "alice", "reviewers")


@pytest.fixture
def reviewer2(roles, django_user_model):
    return _user(django_user_model, "bob", "reviewers")


@pytest.fixture
def requester(roles, django_user_model):
    """Requests runs; also a reviewer, so that the self-approval rule is what stops them."""
    return _user(django_user_model, "rita", "reviewers")


@pytest.fixture
def outsider(roles, django_user_model):
    return _user(django_user_model, "oscar")


@pytest.fixture
def senior(roles, django_user_model):
    """A reviewer in the group "senior" too, with an address for the group's notices."""
    return _user(django_user_model, "sara", "reviewers", "senior", email="sara@shop.example")


@pytest.fixture
def run(shop, requester):
    """A run rita requested, with nothing proposed yet: tests propose its calls with reviewing.propose()."""
    run = Run.objects.create(agent="support", request="Help the customer.", requested_by=requester)
    services.message_append(run=run, role=Message.Role.USER, content=run.request)
    return run


@pytest.fixture
def make_run(shop, requester, model):
    """A run whose model turn is taken by the scripted model server over HTTP."""
    from agents import loop, services

    def make(request_text: str, *, advance: bool = True, **kwargs) -> Run:
        run = services.run_start(agent_name="support", request=request_text, requested_by=requester, **kwargs)
        if advance:
            loop.advance(run.pk)
            run.refresh_from_db()
        return run

    return make


@pytest.fixture
def approved_refund(make_run, reviewer):
    """A run with an auto-run lookup and a refund that alice approved and that ran; returns the refund's call."""
    run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
    call = run.tool_calls.get(status="pending")
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    loop.advance(run.pk)
    call.refresh_from_db()
    return call


@pytest.fixture
def browser():
    """Chromium for one test. While Playwright's loop runs, Django's ORM uses connections of its own (asgiref's
    Local keeps them apart from the thread's): they are closed before the loop stops, or they would outlive the test
    and keep the test database from being dropped. Fixtures listed before this one set up their data before."""
    with stack.chromium() as browser:
        yield browser
        connections.close_all()


@pytest.fixture(scope="module")
def demo(request, tmp_path_factory):
    """The embedded demo (`manage.py demo`) with its demo runs waiting, one per test module."""
    name = request.module.__name__.rpartition(".")[2]
    processes, info = stack.start_demo(tmp_path_factory.mktemp("demo-var"), log_name=f"demo-{name}")
    yield info
    processes.stop()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    page.set_default_timeout(15000)
    return page


@pytest.fixture
def require_postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432 (or DATABASE_URL): this test needs it.")


@pytest.fixture
def auditor(roles, django_user_model):
    """Reads the whole record in the admin and on the insight page; changes nothing."""
    user = _user(django_user_model, "audrey", "auditors")
    user.is_staff = True
    user.save()
    return user
