"""Keeping a lease while its holder works: `with Renewing(renew):` (a tool's body, a model turn).

One renewal thread per process serves every lease held in it, started on first use: entering the block only
registers it. A thread started per block cost a resumption about 0.1-0.2 ms between the claim and the tool's
body (starting it, and its start-up taking the GIL from the body), and its join after.
"""

import logging
import os
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)


class Renewing:
    """`with Renewing(renew):` calls renew() every third of a lease (`seconds`, an execution's by default) while
    the block runs, from the process's renewal thread.

    renew() returns a falsy value once the lease is gone: renewing stops, and `lapsed` says so."""

    def __init__(self, renew: Callable[[], object], seconds: float | None = None):
        self.renew, self.lapsed = renew, False
        self.every = max(0.2, (seconds or settings.EXECUTION_LEASE_SECONDS) / 3)

    def __enter__(self) -> "Renewing":
        _renewer().add(self)
        return self

    def __exit__(self, *exc) -> None:
        _renewer().remove(self)

    def renew_once(self) -> bool:
        """One renewal; False when the lease is gone (renewing stops). An error is logged and retried next time:
        the lease covers two more."""
        try:
            if not self.renew():
                self.lapsed = True
                return False
        except Exception:
            log.exception("renewing a lease failed")
        return True


class _Renewer:
    """The thread that renews every lease of this process when it falls due."""

    def __init__(self) -> None:
        self._due: dict[Renewing, float] = {}  # each block held, and when its next renewal is due
        self._changed = threading.Condition()
        threading.Thread(target=self._loop, name="lease-renewal", daemon=True).start()

    def add(self, holder: Renewing) -> None:
        with self._changed:
            self._due[holder] = time.monotonic() + holder.every
            self._changed.notify()

    def remove(self, holder: Renewing) -> None:
        with self._changed:
            self._due.pop(holder, None)

    def _loop(self) -> None:
        while True:
            for holder in self._next_due():
                keep = holder.renew_once()
                with self._changed:
                    if holder in self._due:  # not left meanwhile
                        if keep:
                            self._due[holder] = time.monotonic() + holder.every
                        else:
                            del self._due[holder]
            connection.close()  # this thread's own: nothing kept open between renewals

    def _next_due(self) -> list[Renewing]:
        """Wait until some lease is due; those that are."""
        with self._changed:
            while True:
                now = time.monotonic()
                due = [holder for holder, when in self._due.items() if when <= now]
                if due:
                    return due
                self._changed.wait(min(self._due.values(), default=now + 60) - now)


_instance: _Renewer | None = None
_instance_lock = threading.Lock()


def _renewer() -> _Renewer:
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = _Renewer()
        return _instance


def _forget() -> None:
    """In a forked child (a prefork worker): no renewal thread was copied; it starts its own when it needs one."""
    global _instance, _instance_lock
    _instance, _instance_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)
