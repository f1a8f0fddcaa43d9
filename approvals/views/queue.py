"""The review queue: a triage list of the pending calls this reviewer may see, the full card of one in a
pane beside it, groups of similar calls, and the batch approval."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from approvals import services
from approvals.web import triage

from ..access import is_reviewer, may_review
from ..planted import planted
from ..selectors import group_calls, queue_facets, queue_rows
from .requests import ReviewerRequest


@login_required
@require_GET
def queue(request: ReviewerRequest) -> HttpResponse:
    if request.htmx and request.GET.get("fragment") == "count":
        return render(request, "approvals/partials/queue_count.html")  # the count comes from the context processor
    wanted = triage.queue_filter(request.GET)
    calls = queue_rows(request.user, wanted)
    summary = triage.summarize(queue_facets(request.user, wanted), wanted, full_page=len(calls) == triage.PAGE_SIZE)
    context = {
        "calls": calls,
        "wanted": wanted,
        "summary": summary,
        "sorts": triage.SORTS,
        "queue_count": summary["total"],
        "is_reviewer": is_reviewer(request.user),
    }
    return render(request, "approvals/queue.html", context)


@login_required
@require_GET
def queue_group(request: ReviewerRequest) -> HttpResponse:
    """A group of similar calls this reviewer may decide, each with the hash it is shown with: one batch."""
    wanted = triage.queue_filter(request.GET)  # read like the queue's filters: what cannot be meant is dropped
    group = {"tool": wanted.tool, "agent": wanted.agent, "band": wanted.band}
    calls = group_calls(request.user, **group) if is_reviewer(request.user) else []
    context = {
        "calls": calls,
        "title": triage.group_title(count=len(calls), tool=wanted.tool, agent=wanted.agent, band=wanted.band),
        "warned": [call for call in calls if call.warning],
    }
    template = "approvals/queue_group.html#batch" if request.htmx else "approvals/queue_group.html"
    return render(request, template, context)


def _selected(values: list[str]) -> list[tuple[int, str]]:
    """Checked calls as (id, the argument hash the reviewer saw), from "id:hash" values."""
    items = []
    for value in values:
        pk, _, shown_hash = value.partition(":")
        if pk.isdigit() and len(pk) < 19:
            items.append((int(pk), shown_hash))
    return items


@login_required
@require_POST
def approve_selected(request: ReviewerRequest) -> HttpResponse:
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
    for pk in done:  # a practice call among them: the reviewer is told at once
        if feedback := planted.feedback(pk):
            messages.warning(request, f"#{pk}: {feedback}")
    return redirect("approvals:queue")
