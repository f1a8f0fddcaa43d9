"""The review queue: every pending call this reviewer may see, and the batch approval."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..access import can_decide, is_reviewer, may_review
from ..selectors import pending_calls


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    fragment = request.GET.get("fragment") if request.htmx else None
    if fragment == "count":
        return render(request, "approvals/partials/queue_count.html")  # the count comes from the context processor
    calls = list(pending_calls(request.user))
    for call in calls:
        call.viewer_can_decide, call.viewer_why = can_decide(request.user, call)
    context = {"calls": calls, "is_reviewer": is_reviewer(request.user)}
    if fragment == "live":
        return render(request, "approvals/partials/live_queue.html", context)
    return render(request, "approvals/queue.html", context)


def _selected(values: list[str]) -> list[tuple[int, str]]:
    """Checked calls as (id, the argument hash the reviewer saw), from "id:hash" values."""
    items = []
    for value in values:
        pk, _, shown_hash = value.partition(":")
        if pk.isdigit():
            items.append((int(pk), shown_hash))
    return items


@login_required
@require_POST
def approve_selected(request: HttpRequest) -> HttpResponse:
    allowed, why = may_review(request.user)
    if not allowed:
        raise PermissionDenied(why)
    items = _selected(request.POST.getlist("calls"))
    if not items:
        messages.error(request, "Select the calls to approve.")
        return redirect("approvals:queue")
    results = services.toolcall_approve_many(reviewer=request.user, items=items)
    done = [pk for pk, problem in results if not problem]
    if done:
        plural = "s" if len(done) != 1 else ""
        messages.success(request, f"Approved {len(done)} call{plural}: " + ", ".join(f"#{pk}" for pk in done))
    for pk, problem in results:
        if problem:
            messages.error(request, f"#{pk} was not approved: {problem}")
    return redirect("approvals:queue")
