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
# most); Django's own checks below close one that has aged or broken.
app.conf["CELERY_DB_REUSE_MAX"] = 10_000


@worker_init.connect
def keep_database_connections(**kwargs):
    """Workers keep their database connection between tasks for WORKER_CONN_MAX_AGE seconds, checked before reuse."""
    from django.conf import settings
    from django.db import connections

    for alias in connections:
        connections[alias].settings_dict.update(CONN_MAX_AGE=settings.WORKER_CONN_MAX_AGE, CONN_HEALTH_CHECKS=True)


@task_prerun.connect
def drop_aged_or_broken_connections(**kwargs):
    from django.db import close_old_connections

    close_old_connections()
