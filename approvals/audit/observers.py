"""Who hears of each event of the trail once it is committed: the callables named in
settings.REVIEWHUB_OBSERVERS (logs, metrics, notifications). approvals/ knows nothing of them.

An observer runs after the commit, never inside the transaction that recorded the
event, and what it raises is logged and swallowed: observing never changes the record.
"""

import logging
from functools import cache

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)


def event_recorded(event) -> None:
    """Hand this audit event to every configured observer once the transaction commits."""
    if getattr(settings, "REVIEWHUB_OBSERVERS", None):
        transaction.on_commit(lambda: _tell_observers(event))


def _tell_observers(event) -> None:
    for path in settings.REVIEWHUB_OBSERVERS:
        try:
            _observer(path)(event)
        except Exception:
            log.exception("observer %s failed on audit event %s", path, event.pk)


@cache  # a path names the same callable for the process's life; importing it again took ~2 us per event
def _observer(path: str):
    return import_string(path)


def measured(what: str, seconds: float, error: str = "") -> None:
    """A timing worth keeping (a model call, a live push's fan-out), for settings.REVIEWHUB_MEASURE."""
    path = getattr(settings, "REVIEWHUB_MEASURE", "")
    if not path:
        return
    try:
        import_string(path)(what, seconds, error)
    except Exception:
        log.exception("measuring %s failed", what)


def browser_notifications(calls, user_ids) -> dict[int, dict[int, bool]]:
    """By call id: which of these users want a browser notification of it (settings.REVIEWHUB_BROWSER_PREFERENCES,
    asked once for all the calls); a call or a user left out, or every one without that setting, wants one."""
    path = getattr(settings, "REVIEWHUB_BROWSER_PREFERENCES", "")
    if not path or not calls:
        return {}
    try:
        return import_string(path)(list(calls), list(user_ids))
    except Exception:
        log.exception("reading browser preferences failed")
        return {}
