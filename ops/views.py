"""Health, metrics and Slack's interactivity URL: no session, no CSRF, no page."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from approvals.access import can_read_metrics

from . import health, metrics, slack_actions


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers. Nothing else is checked: a load balancer's liveness probe."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Database, migrations, Redis, broker and workers, each with its time; 503 when one fails."""
    checks = health.readiness()
    ready = all(check.ok for check in checks)
    body = {"status": "ready" if ready else "not ready", "checks": {check.name: check.as_dict() for check in checks}}
    return JsonResponse(body, status=200 if ready else 503)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    allowed = can_read_metrics(
        authorization=request.headers.get("Authorization", ""), address=request.META.get("REMOTE_ADDR", "")
    )
    if not allowed:
        refused = "Metrics need METRICS_TOKEN or METRICS_ALLOWED_NETWORKS.\n"
        return HttpResponse(refused, status=403, content_type="text/plain")
    body, content_type = metrics.exposition()
    return HttpResponse(body, content_type=content_type)


@csrf_exempt  # Slack signs its requests instead (slack_actions.verified)
@require_POST
def slack_interactions(request: HttpRequest) -> HttpResponse:
    try:
        slack_actions.interaction_handle(body=request.body, headers=request.headers)
    except slack_actions.NotSigned as exc:
        return HttpResponse(str(exc), status=401, content_type="text/plain")
    except slack_actions.Malformed as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    return HttpResponse(status=200)
