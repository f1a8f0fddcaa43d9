from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .. import insight
from ..audit import AUDIT_PERMISSION


@login_required
@permission_required(AUDIT_PERMISSION, raise_exception=True)
@require_GET
def insight_page(request: HttpRequest) -> HttpResponse:
    form = insight.WindowForm(request.GET or None)
    context = {"form": form, "report": insight.report(form.window())}
    if request.htmx:
        return render(request, "approvals/insight.html#body", context)
    return render(request, "approvals/insight.html", context)
