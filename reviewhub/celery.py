import os

from celery import Celery
from celery.signals import task_prerun, worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")

app = Celery("reviewhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    """Tell /readyz this worker is alive (ops/heartbeat.py)."""
    from ops import heartbeat

    return heartbeat.start(sender.hostname)


# Celery's Django fixup closes the database connection around every task unless told to reuse it; a new
# PostgreSQL connection costs milliseconds between a decision and its tool. Reuse it (for 10,000 tasks at
# most); the checks below close one that has aged, broken or been ended by its server.
app.conf["CELERY_DB_REUSE_MAX"] = 10_000


@worker_init.connect
def keep_database_connections(**kwargs):
    """Workers keep their database connection between tasks for WORKER_CONN_MAX_AGE seconds."""
    from django.conf import settings
    from django.db import connections

    for alias in connections:
        connections[alias].settings_dict.update(CONN_MAX_AGE=settings.WORKER_CONN_MAX_AGE)


@task_prerun.connect
def drop_aged_or_broken_connections(**kwargs):
    """Before each task: close a connection that has aged, failed, or been ended by its server while idle (checked
    without a round trip: runtime/connections.py)."""
    from runtime.connections import close_unusable

    close_unusable()
