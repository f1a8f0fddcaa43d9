"""Notification work, run by Celery workers (ops/observers.py enqueues it after the commit).
Tasks take ids, load, and call the module that does the work."""

from celery import shared_task

from . import notify, slack


@shared_task(ignore_result=True)
def call_waiting(call_id: int) -> None:
    notify.call_waiting(call_id=call_id)


@shared_task(ignore_result=True)
def call_settled(call_id: int) -> None:
    slack.call_update(call_id=call_id)


@shared_task(ignore_result=True)
def run_cancelled(run_id: int) -> None:
    slack.run_update(run_id=run_id)


@shared_task(ignore_result=True)
def email_digests() -> int:
    """Celery beat runs this every NOTIFY_DIGEST_MINUTES: each digest reviewer's waiting calls."""
    return notify.digests_send()


@shared_task(ignore_result=True)
def slack_tell(channel_id: str, slack_user_id: str, text: str) -> None:
    slack.tell(channel_id=channel_id, slack_user_id=slack_user_id, text=text)
