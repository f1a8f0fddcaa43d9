from django.apps import AppConfig


class AguiConfig(AppConfig):
    name = "agui"
    verbose_name = "AG-UI agents"

    def ready(self):
        from agents.agents import registry as agents
        from approvals.models import Run
        from approvals.tools import registry as tools

        from . import offered, starts

        # An AG-UI agent's calls get their tool from its declarations (kept as a remote agent's, remote/declared.py),
        # or, for the tools ReviewHub offered it, from the registry; those ReviewHub runs itself (agui/offered.py).
        tools.add_source(Run.AdvancedBy.AGUI, offered.tool_for_call, runs_here=offered.runs_here)
        agents.add_starter(starts.STARTER)  # New run and start_run offer and start the AG-UI agents too
