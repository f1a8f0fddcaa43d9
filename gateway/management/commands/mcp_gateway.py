"""python manage.py mcp_gateway NAME: the MCP gateway NAME over stdio (an MCP client starts it as its server)."""

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from gateway.models import Gateway
from gateway.server import gateway_server


class Command(BaseCommand):
    help = "Serve the MCP gateway NAME over stdio: its upstreams' tools, calls that change things reviewed first."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        if not Gateway.objects.filter(agent__name=name).exists():
            raise CommandError(f"There is no MCP gateway named {name!r}; add one in the admin (MCP gateway).")
        anyio.run(self._serve, name)

    async def _serve(self, name: str) -> None:
        server = gateway_server(name)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
