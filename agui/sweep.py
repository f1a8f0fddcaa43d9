"""Nothing is stuck: an exchange whose worker stopped while sending it (its claim older than the stream's
timeout) fails its run with the reason. It is not sent again by itself, since the agent may have acted on it;
Retry sends the same input again."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from approvals import services

from .models import Exchange


def stalled_fail(*, now=None) -> int:
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.AGUI_TIMEOUT_SECONDS + 60)
    stalled = Exchange.objects.filter(status=Exchange.Status.SENDING, claimed_at__lt=cutoff).select_related("run")
    failed = 0
    for exchange in stalled:
        problem = "the worker sending the input stopped before the agent's stream ended"
        if Exchange.objects.filter(pk=exchange.pk, status=Exchange.Status.SENDING).update(
            status=Exchange.Status.FAILED, last_error=problem
        ):
            reason = f"The AG-UI agent's run stopped: {problem}; the agent may have acted on it. Retry sends it again."
            failed += services.run_fail(run=exchange.run, error=reason)
    return failed
