"""The embedded default's background threads: a test (or anyone) can wait until what was handed to them is done."""

import threading
from types import SimpleNamespace

import pytest

from runtime import background

pytestmark = pytest.mark.django_db(transaction=True)  # background() hands over after the commit: outside any here


def test_wait_idle_waits_for_every_task_handed_to_a_thread():
    release, started = threading.Event(), threading.Event()

    def body(n):
        started.set()
        release.wait(10)

    task = SimpleNamespace(name="test.blocked", run=body)
    background.background(task, 1, pool="test-background")  # no transaction: handed over at once
    assert started.wait(10)
    assert background.wait_idle(timeout=0.05) is False  # still running
    release.set()
    assert background.wait_idle(timeout=10) is True


def test_a_task_that_fails_is_done_too():
    def body():
        raise RuntimeError("a task's error is logged, not raised")

    background.background(SimpleNamespace(name="test.failing", run=body), pool="test-background")
    assert background.wait_idle(timeout=10) is True
