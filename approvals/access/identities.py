"""Agents that run elsewhere: what an agent identity's token may see and use (its runs, calls, tools, gateways)."""

from ..models import Run, ToolCall
from ..planted import planted
from .people import logged_in


def agent_calls(agent_user, queryset=None):
    """The calls an agent identity may see and act on through the API: those of runs it requested and advances."""
    queryset = queryset if queryset is not None else ToolCall.objects.all()
    if not logged_in(agent_user):
        return queryset.none()
    # Never a practice call (approvals/planted.py), whatever run it is in.
    return planted.hide(queryset.filter(run__requested_by=agent_user, run__advanced_by=Run.AdvancedBy.REMOTE))


def agent_runs(agent_user, queryset=None):
    """The runs (threads) an agent identity may propose into: those it requested and advances."""
    queryset = queryset if queryset is not None else Run.objects.all()
    if not logged_in(agent_user):
        return queryset.none()
    return queryset.filter(requested_by=agent_user, advanced_by=Run.AdvancedBy.REMOTE)


def agent_tools(agent_user, queryset):
    """An agent identity's own tool declarations (any model with an `agent` whose `user` is the identity's)."""
    if not logged_in(agent_user):
        return queryset.none()
    return queryset.filter(agent__user=agent_user)


def agent_gateways(agent_user, queryset):
    """The MCP gateways an agent identity's token may use: its own (gateway/http.py asks)."""
    if not logged_in(agent_user):
        return queryset.none()
    return queryset.filter(agent__user=agent_user)
