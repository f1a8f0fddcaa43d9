from django.apps import AppConfig


def _always(call) -> bool:
    return True


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self):
        from approvals.advancers import Advancer, register
        from approvals.models import Run

        from . import checks  # noqa: F401  registers the system checks

        # ReviewHub's own runtime advances the runs it starts: it calls the model, and executes every approved call.
        register(
            Advancer(
                name=Run.AdvancedBy.LOCAL,
                resume="REVIEWHUB_RESUME",
                starts_runs=True,
                calls_model=True,
                told_of_changes=False,
                agent_facts=False,
                reports_results=False,
                executes=_always,
            )
        )
