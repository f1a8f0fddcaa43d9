"""Where advancing a run happens: Celery workers, or (embedded) thread pools here.

approvals/ calls enqueue_advance() after a commit (settings.REVIEWHUB_RESUME), and so
does the sweep. Tool execution and model turns go to separate places — the tools and
turns Celery queues, or two thread pools — so a slow model never keeps an approved
call waiting; each hands the run over to the other when that kind of work is next.
"""

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

from approvals.models import ToolCall

from . import loop
from .loop import RUNNABLE, TOOLS, TURN

log = logging.getLogger(__name__)

_executors: dict[str, ThreadPoolExecutor] = {}
_executors_lock = threading.Lock()


def enqueue_advance(run_id: int, *, approved: bool = False) -> None:
    """Take the run further: its approved calls first, else its next model turn. `approved`: the caller has just
    approved one of its calls (settings.REVIEWHUB_RESUME's keyword), so there is one without asking."""
    runnable = approved or ToolCall.objects.filter(run_id=run_id, status__in=RUNNABLE).exists()
    enqueue(run_id, TOOLS if runnable else TURN)


def queue_for(kind: str) -> str:
    return settings.TOOLS_QUEUE if kind == TOOLS else settings.TURNS_QUEUE


def enqueue(run_id: int, kind: str) -> None:
    if settings.TASKS_IN_PROCESS:
        with _executors_lock:
            if kind not in _executors:
                _executors[kind] = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"agent-{kind}")
        _executors[kind].submit(_advance_here, run_id, kind)
    else:
        from .tasks import advance_run

        advance_run.apply_async((run_id, kind), queue=queue_for(kind))


def _advance_here(run_id: int, kind: str) -> None:
    close_old_connections()
    try:
        following = loop.advance(run_id, only=kind)
        if following:
            enqueue(run_id, following)
    except Exception:
        log.exception("advancing run %s failed", run_id)
    finally:
        close_old_connections()
