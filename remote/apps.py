from django.apps import AppConfig


class RemoteConfig(AppConfig):
    name = "remote"
    verbose_name = "Agents that run elsewhere"

    def ready(self):
        from approvals.advancers import Advancer, register
        from approvals.models import Run
        from approvals.tools import registry

        from .declared import current_tools, resolve_tools, tool_for_call
        from .resume import outbox

        # A remote agent (the agent API's, or the MCP gateway proposing as one) advances its own runs: it calls its
        # model, executes its approved calls and reports them; a decision wakes its long-polls and sends its webhooks.
        # Its calls' tools are its own declarations, never the registry's.
        register(
            Advancer(
                name=Run.AdvancedBy.REMOTE,
                resume="REVIEWHUB_REMOTE_RESUME",
                starts_runs=False,  # it is running already: its first proposal made the run
                calls_model=False,
                told_of_changes=True,
                agent_facts=True,
                reports_results=True,
                tool_for_call=tool_for_call,
                resolve_tools=resolve_tools,
                outbox=outbox,  # its webhook deliveries commit with the decision; its long-polls wake as it does
                note="runs elsewhere: it executes its own calls and reports the results",
            )
        )
        registry.add_catalog(current_tools)  # their names in the admin's policy rules and tool settings
