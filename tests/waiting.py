"""Tests wait for the event they need, never for a fixed time: a generous ceiling
only bounds how long a failing test takes, it is never what makes one pass."""

import time


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05):
    """Poll predicate until it returns something truthy, and return that; None if the ceiling passes first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)
