from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents and the demo shop"

    def ready(self):
        from . import checks, tools  # noqa: F401  registers the system checks and the demo tools
