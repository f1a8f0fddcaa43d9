import pytest
from django.conf import settings as django_settings
from django.db import connection

from approvals.models import PolicyRule, Run
from tests.livestack import session_cookie
from tests.stack import Processes, free_port, production_env, redis_available, start_asgi, start_worker
from tests.waiting import wait_for


class Stack:
    def __init__(self, processes: Processes, port: int):
        self.processes = processes
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.asgi = None

    def start_asgi(self):
        self.asgi = start_asgi(self.processes, self.port)

    def stop_asgi(self):
        self.asgi.terminate()
        self.asgi.wait(timeout=10)


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, model_server_instance):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL is not reachable: the live browser tests need it.")
    if not redis_available(django_settings.REDIS_TEST_URL):
        pytest.skip(f"Redis is not reachable at {django_settings.REDIS_TEST_URL}: the live browser tests need it.")
    queue = django_settings.CELERY_TASK_DEFAULT_QUEUE
    env = production_env(
        connection.settings_dict["NAME"], django_settings.REDIS_TEST_URL, model_server_instance.url, queue
    )
    stack = Stack(Processes(env), free_port())
    start_worker(stack.processes, queue)
    stack.start_asgi()
    yield stack
    stack.processes.stop()


def others_busy_in_the_database() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "select count(*) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()"
            " and state is not null and state <> 'idle'"
        )
        return cursor.fetchone()[0]


@pytest.fixture
def resumed_by_the_worker(stack, model, settings):
    """Runs started here are advanced by the worker. Afterwards, wait until the
    worker and the server are idle: the database is emptied for the next test,
    and a request still reading it would deadlock with that."""
    settings.TASKS_IN_PROCESS = False
    settings.REVIEWHUB_RESUME = "agents.dispatch.enqueue_advance"
    yield
    wait_for(lambda: not Run.objects.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists(), timeout=15)
    wait_for(lambda: others_busy_in_the_database() == 0, timeout=10)


@pytest.fixture
def open_page(browser, stack):
    """A page of a new browser context logged in as `user`; fails the test on any script error."""
    contexts, errors = [], []

    def open_page(user, path="/", init_script=None):
        context = browser.new_context(base_url=stack.url)
        context.add_cookies([{"name": "sessionid", "value": session_cookie(user).split("=", 1)[1], "url": stack.url}])
        if init_script:
            context.add_init_script(init_script)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda msg: "Content Security Policy" in msg.text and errors.append(msg.text))
        page.goto(path)
        page.evaluate("window.notReloaded = true")
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == []


@pytest.fixture
def replies_go_without_review(shop):
    """These tests are about calls pushed live, not about the support agent's reply to the customer (its checkpoint
    has tests of its own, tests/approvals/test_checkpoint*): a policy rule lets the reply go, and runs end as before."""
    PolicyRule.objects.create(name="Replies go", tool_name="reply_to_customer", outcome=PolicyRule.Outcome.RUN)
