from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from approvals import access
from approvals.services import NotAllowed

from . import agents, services


class NewRunForm(forms.Form):
    agent = forms.ChoiceField(choices=agents.choices)
    request = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), max_length=4000, label="What should the agent do?"
    )
    dry_run = forms.BooleanField(required=False, label="Dry run (tools that write only show what they would do)")


def requester_for(request: HttpRequest):
    """Who requests a run started here: the logged-in user; in the embedded demo, its agent account
    (settings.REVIEWHUB_DEMO_RUNS_AS), so that the one person trying it may decide the run's calls."""
    if not settings.REVIEWHUB_DEMO_RUNS_AS:
        return request.user
    return get_user_model().objects.filter(username=settings.REVIEWHUB_DEMO_RUNS_AS, is_active=True).first()


@login_required
@require_http_methods(["GET", "POST"])
def new_run(request: HttpRequest) -> HttpResponse:
    allowed, why = access.can_start_run(request.user)
    if not allowed:
        raise PermissionDenied(why)
    form = NewRunForm(request.POST or None)
    requester = requester_for(request)
    if request.method == "POST" and form.is_valid():
        if requester is None:
            form.add_error(None, f"The demo's agent account “{settings.REVIEWHUB_DEMO_RUNS_AS}” does not exist.")
        else:
            try:
                run = services.run_start(
                    agent_name=form.cleaned_data["agent"],
                    request=form.cleaned_data["request"],
                    requested_by=requester,
                    dry_run=form.cleaned_data["dry_run"],
                )
                return redirect("approvals:run", pk=run.pk)
            except NotAllowed as exc:  # e.g. a dry run of an agent that runs its own tools (an AG-UI agent)
                form.add_error("dry_run", str(exc))
    decides, why = access.decides_runs_of(request.user, requester)
    context = {"form": form, "runs_as": settings.REVIEWHUB_DEMO_RUNS_AS, "agents": agents.registry.all()}
    context["cannot_decide"] = "" if decides else why
    return render(request, "agents/new_run.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
def runs(request: HttpRequest) -> HttpResponse:
    runs = access.visible_runs(request.user).select_related("requested_by")[:200]
    return render(request, "agents/runs.html", {"runs": runs})
