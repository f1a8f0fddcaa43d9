"""Health, metrics and Slack's interactivity URL (no session, no CSRF, no page), and a reviewer's notification
preferences."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from approvals.access import can_read_metrics, can_set_notifications
from approvals.views.requests import ReviewerRequest

from . import health, metrics, slack_actions
from .forms import PreferenceForm
from .models import NotificationPreference


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


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: ReviewerRequest) -> HttpResponse:
    """The reviewer's own notification preferences: add one (button "add") or delete one ("delete")."""
    allowed, why = can_set_notifications(request.user)
    if not allowed:
        return HttpResponseForbidden(why)
    form = PreferenceForm(user=request.user)
    if request.method == "POST":
        if "delete" in request.POST:
            NotificationPreference.objects.filter(user=request.user, pk=request.POST.get("delete") or 0).delete()
            return redirect("ops:notifications")
        if "add" not in request.POST:
            return HttpResponseBadRequest("Say what to do: add a preference or delete one.")
        form = PreferenceForm(request.POST, user=request.user)
        if form.is_valid():
            form.save()
            return redirect("ops:notifications")
    rows = NotificationPreference.objects.filter(user=request.user).select_related("group").order_by("tool_name")
    status = 400 if form.errors else 200
    context = {"form": form, "rows": rows, "digest_minutes": settings.NOTIFY_DIGEST_MINUTES}
    return render(request, "ops/notifications.html", context, status=status)
