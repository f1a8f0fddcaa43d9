"""How New run and start_run see AG-UI agents: as agents a run can be started with (agents.agents.Starter)."""

from django.db import DatabaseError

from agents.agents import Starter


def _choices() -> list[tuple[str, str]]:
    from .models import AguiAgent

    try:
        return [(agent.name, agent.label) for agent in AguiAgent.objects.only("name", "title")]
    except DatabaseError:  # before the first migrate (manage.py's argument parsers ask early)
        return []


def _start(*, name: str, request: str, requested_by=None, dry_run: bool = False):
    from .models import AguiAgent
    from .services import agui_run_start

    agent = AguiAgent.objects.get(name=name)
    return agui_run_start(agent=agent, request=request, requested_by=requested_by, dry_run=dry_run)


STARTER = Starter(choices=_choices, start=_start)
