"""Where notification work happens: a Celery task in production-like mode, a thread of this
process in the embedded default. Always after the commit that caused it (observers run then)."""

import logging
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None


def enqueue(task, *args) -> None:
    """Run this Celery task with these arguments, elsewhere: never inside the caller's transaction."""
    global _executor
    if not settings.TASKS_IN_PROCESS:
        task.apply_async(args)
        return
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="notify")
    _executor.submit(_here, task, args)


def _here(task, args) -> None:
    close_old_connections()
    try:
        task.run(*args)
    except Exception:
        log.exception("notification task %s failed", task.name)
    finally:
        close_old_connections()
