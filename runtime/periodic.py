"""Periodic work: one table (settings.PERIODIC_WORK) that Celery beat and the embedded default both read, so
what production does every N seconds the embedded default does too.

Production-like: settings.CELERY_BEAT_SCHEDULE is beat_schedule(PERIODIC_WORK) and beat enqueues each task.
Embedded (settings.TASKS_IN_PROCESS): run_forever() runs each task's body on one thread of the web process when
it is due. This module imports nothing of the apps at import time (the settings import it).
"""

import logging
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Periodic:
    task: str  # the Celery task's dotted path
    seconds: float
    expires: bool = False  # a pass queued while no worker ran is dropped: the next one does its work


def beat_schedule(work: dict[str, Periodic]) -> dict:
    """Celery beat's schedule of the table."""
    schedule = {}
    for name, entry in work.items():
        schedule[name] = {"task": entry.task, "schedule": entry.seconds}
        if entry.expires:
            schedule[name]["options"] = {"expires": entry.seconds}
    return schedule


def run_due(work: dict[str, Periodic], due: dict[str, float], now: float) -> list[str]:
    """Run, in this thread, every entry whose time has come; `due` holds when each is next due (kept here).
    Returns the names run. A failing pass is logged; the next one tries again."""
    from django.db import close_old_connections
    from django.utils.module_loading import import_string

    ran = []
    for name, entry in work.items():
        if due.setdefault(name, now + entry.seconds) > now:
            continue
        due[name] = now + entry.seconds
        close_old_connections()
        try:
            import_string(entry.task).run()
        except Exception:
            log.exception("periodic %s failed", name)
        finally:
            close_old_connections()
        ran.append(name)
    return ran


def run_forever(tick: float = 1.0) -> None:
    """The embedded default's beat: every `tick` seconds, what is due of settings.PERIODIC_WORK."""
    from django.conf import settings

    due: dict[str, float] = {}
    while True:
        time.sleep(tick)
        run_due(settings.PERIODIC_WORK, due, time.monotonic())
