"""The catch rates (a section of the insight page, and its own page) and the auditors' export."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from approvals.access import can_list_practice_calls, can_read_catch_rates, practice_calls_for
from approvals.insight import WindowForm
from approvals.views.requests import ReviewerRequest

from . import export, insight


def _window(request: ReviewerRequest):
    if not can_read_catch_rates(request.user):
        raise PermissionDenied("Reading catch rates needs the audit permission.")
    form = WindowForm(request.GET or None)
    return form, form.window()


@login_required
@require_GET
def catch_rate(request: ReviewerRequest) -> HttpResponse:
    form, window = _window(request)
    by = request.GET.get("by", "")
    by = by if by in insight.BY else "reviewer"
    rows = insight.catch_rates(window, by)
    context = {
        "form": form,
        "window": window,
        "by": by,
        "by_label": insight.BY[by],
        "rows": rows,
        "total": insight.totals(rows),
        "trend": insight.trend(window),
        "trend_labels": insight.TREND,
        "choices": insight.BY,
        "query": request.GET.urlencode(),
        "lists_waiting": can_list_practice_calls(request.user),
    }
    template = "practice/catch_rate.html#section" if request.htmx else "practice/catch_rate.html"
    return render(request, template, context)


@login_required
@require_GET
def catch_rate_csv(request: ReviewerRequest) -> HttpResponse:
    _, window = _window(request)
    calls = practice_calls_for(request.user, insight.practice_calls(window))
    response = HttpResponse(export.csv_text(calls), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="practice-{window.first}-{window.last}.csv"'
    return response
