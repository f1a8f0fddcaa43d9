"""The insight page, and adding a rule it proposes from past decisions (in shadow mode)."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from approvals import access, insight, services
from approvals.audit import AUDIT_PERMISSION
from approvals.insight import learned

from .requests import ReviewerRequest


def _page(request: ReviewerRequest, form: insight.WindowForm, *, status: int = 200, **extra) -> HttpResponse:
    window = form.window()
    context = {
        "form": form,
        "report": insight.report(window),
        "proposals": learned.proposals(window),
        "can_add_rules": access.can_add_learned_rule(request.user)[0],
        "learn_min_calls": settings.LEARN_MIN_CALLS,
        **extra,
    }
    if request.htmx and request.method == "GET":
        return render(request, "approvals/insight.html#body", context, status=status)
    return render(request, "approvals/insight.html", context, status=status)


@login_required
@permission_required(AUDIT_PERMISSION, raise_exception=True)
@require_GET
def insight_page(request: ReviewerRequest) -> HttpResponse:
    return _page(request, insight.WindowForm(request.GET or None))


@login_required
@permission_required(AUDIT_PERMISSION, raise_exception=True)
@require_POST
def insight_rule_add(request: ReviewerRequest) -> HttpResponse:
    """Add a proposed rule in shadow mode and show its replay: the proposal's item (htmx), or the rule in the
    admin with the replay in a message. A proposal the decisions do not make (any more) adds nothing: 400,
    or 409 when a rule already covers it."""
    allowed, why = access.can_add_learned_rule(request.user)
    if not allowed:
        raise PermissionDenied(why)
    form = insight.WindowForm(request.POST)
    tool = request.POST.get("tool_name", "")
    try:
        if not form.is_valid():
            raise services.RuleNotProposed("The days chosen are not valid: nothing was added.")
        added = services.learned_rule_add(
            user=request.user,
            window=form.window(),
            tool=tool,
            field=request.POST.get("field", ""),
            value=request.POST.get("value", ""),
        )
    except services.DecisionError as error:
        if not request.htmx:
            return _page(request, form, status=error.status, learn_error=error)
        proposal = learned.proposal_for(form.window(), tool=tool) if tool else None
        context: dict[str, object] = {
            "proposal": proposal,
            "error": error,
            "can_add_rules": True,
            "window": form.window(),
        }
        return render(request, "approvals/partials/learned_rule.html", context, status=error.status)
    if request.htmx:
        context = {"proposal": added.proposal, "added": added, "window": added.proposal.window}
        return render(request, "approvals/partials/learned_rule.html", context)
    messages.success(request, added.summary)
    return redirect("admin:approvals_policyrule_change", added.rule.pk)
