from django.apps import AppConfig


class AguiConfig(AppConfig):
    name = "agui"
    verbose_name = "AG-UI agents"

    def ready(self):
        from agents.agents import registry as agents
        from approvals.models import Run
        from approvals.tools import registry as tools
        from remote.declared import tool_for_call

        from . import starts

        # An AG-UI agent's calls get their tool from its declarations (kept as a remote agent's, remote/declared.py).
        tools.add_source(Run.AdvancedBy.AGUI, tool_for_call)
        agents.add_starter(starts.STARTER)  # New run and start_run offer and start the AG-UI agents too
