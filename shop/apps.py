from django.apps import AppConfig


class ShopConfig(AppConfig):
    """The demo support shop: an example of an app that brings its own tools and agents."""

    name = "shop"
    verbose_name = "Demo shop"

    def ready(self):
        from . import agents

        agents.register()  # the shop's tools, its two agents, and its script for the scripted model
