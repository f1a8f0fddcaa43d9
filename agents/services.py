from approvals import services as approvals_services
from approvals.models import Run

from .agents import registry


def run_start(*, agent_name: str, request: str, requested_by=None, dry_run: bool = False) -> Run:
    agent = registry.get(agent_name)
    starter = registry.starter_for(agent_name) if agent is None else None
    if starter is not None:
        return starter.start(name=agent_name, request=request, requested_by=requested_by, dry_run=dry_run)
    if agent is None:
        raise ValueError(f"there is no agent named {agent_name!r}")
    return approvals_services.run_create(
        agent=agent.name, request=request, requested_by=requested_by, system_prompt=agent.system_prompt, dry_run=dry_run
    )
