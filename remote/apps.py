from django.apps import AppConfig


class RemoteConfig(AppConfig):
    name = "remote"
    verbose_name = "Agents that run elsewhere"

    def ready(self):
        from approvals.models import Run
        from approvals.tools import registry

        from .declared import current_tools, tool_for_call

        # A call of a run a remote agent advances gets its tool from that agent's declarations, never the registry's.
        registry.add_source(Run.AdvancedBy.REMOTE, tool_for_call)
        registry.add_catalog(current_tools)  # their names in the admin's policy rules and tool settings
