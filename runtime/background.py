"""Work done elsewhere, after the commit that caused it: a Celery task on a worker (production-like), or the
same task's body on a thread of this process (the embedded default, settings.TASKS_IN_PROCESS).

background() is the one place that chooses between the two; agents/, ops/ and remote/ enqueue through it.
It imports nothing of the apps, so any of them can use it.
"""

import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections, transaction

log = logging.getLogger(__name__)

_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_in_flight = 0  # tasks handed to a pool here and not yet finished
_settled = threading.Condition()


def background(task, *args, queue: str = "", countdown: float = 0, pool: str = "background", threads: int = 1) -> None:
    """Run this Celery task with these arguments once the caller's transaction commits (at once outside one),
    `countdown` seconds later: on `queue` (Celery's routing when ""), or in the embedded default on the thread
    pool named `pool` (`threads` threads; work of one pool never waits behind another's)."""
    transaction.on_commit(functools.partial(_start, task, args, queue, countdown, pool, threads))


def _start(task, args: tuple, queue: str, countdown: float, pool: str, threads: int) -> None:
    if not settings.TASKS_IN_PROCESS:
        options = {"queue": queue} if queue else {}
        task.apply_async(args, **options, **({"countdown": countdown} if countdown else {}))
    elif countdown:
        timer = threading.Timer(countdown, _in_thread, args=(task, args, pool, threads))
        timer.daemon = True
        timer.start()
    else:
        _in_thread(task, args, pool, threads)


def _in_thread(task, args: tuple, pool: str, threads: int) -> None:
    with _pools_lock:
        if pool not in _pools:
            _pools[pool] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=pool)
    global _in_flight
    with _settled:
        _in_flight += 1
    _pools[pool].submit(_counted, task, args)


def _counted(task, args: tuple) -> None:
    global _in_flight
    try:
        run_here(task, args)
    finally:
        with _settled:
            _in_flight -= 1
            _settled.notify_all()


def wait_idle(timeout: float) -> bool:
    """Wait until every task handed to a thread here has finished (tests, before their tables are emptied);
    False if some still run after `timeout` seconds. A task still waiting for its countdown is not counted."""
    with _settled:
        return _settled.wait_for(lambda: _in_flight == 0, timeout)


def run_here(task, args: tuple = ()) -> None:
    """The task's body in this thread, on a database connection of its own; an error is logged, not raised
    (as a worker would log it)."""
    close_old_connections()
    try:
        task.run(*args)
    except Exception:
        log.exception("background task %s%r failed", task.name, args)
    finally:
        close_old_connections()
