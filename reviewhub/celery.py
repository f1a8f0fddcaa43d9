import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")

app = Celery("reviewhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    """Tell /readyz this worker is alive (ops/heartbeat.py)."""
    from ops import heartbeat

    return heartbeat.start(sender.hostname)
