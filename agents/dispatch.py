"""Where advancing a run happens: a Celery worker, or (embedded) a thread here.

approvals/ calls enqueue_advance() after a commit (settings.REVIEWHUB_RESUME).
"""

import logging
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None


def enqueue_advance(run_id: int) -> None:
    if settings.TASKS_IN_PROCESS:
        global _executor
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agent")
        _executor.submit(_advance_here, run_id)
    else:
        from .tasks import advance_run

        advance_run.delay(run_id)


def _advance_here(run_id: int) -> None:
    from .loop import advance

    close_old_connections()
    try:
        advance(run_id)
    except Exception:
        log.exception("advancing run %s failed", run_id)
    finally:
        close_old_connections()
