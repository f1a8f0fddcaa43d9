from django.apps import AppConfig


class AguiConfig(AppConfig):
    name = "agui"
    verbose_name = "AG-UI agents"

    def ready(self):
        from agents.agents import registry as agents
        from approvals.advancers import Advancer, register
        from approvals.models import Run

        from . import offered, starts

        # ReviewHub posts an AG-UI agent its input and resumes it with the decisions; the agent calls its model.
        # Its calls' tools are its declarations (kept as a remote agent's, remote/declared.py) or, for the tools
        # ReviewHub offered it, the registry's; those ReviewHub runs itself (agui/offered.py).
        register(
            Advancer(
                name=Run.AdvancedBy.AGUI,
                resume="REVIEWHUB_AGUI_RESUME",
                starts_runs=True,  # the first input is sent after the start's commit
                calls_model=False,
                told_of_changes=True,
                agent_facts=True,
                reports_results=False,  # its stream reports results; agui/sweep.py takes over a stalled exchange
                executes=offered.runs_here,
                tool_for_call=offered.tool_for_call,
                resolve_tools=offered.resolve_tools,
                note="runs elsewhere: it executes its own calls and reports the results",
            )
        )
        agents.add_starter(starts.STARTER)  # New run and start_run offer and start the AG-UI agents too
