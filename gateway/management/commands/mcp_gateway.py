"""python manage.py mcp_gateway NAME: the MCP gateway NAME over stdio (an MCP client starts it as its server)."""

import anyio
from django.core.management.base import BaseCommand
from mcp.server.stdio import stdio_server

from gateway.models import Gateway
from gateway.server import gateway_server
from gateway.standalone import explain


class Command(BaseCommand):
    help = "Serve the MCP gateway NAME over stdio: its upstreams' tools, calls that change things reviewed first."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--env-file", default="", help="A file of NAME=value lines with the settings (read by manage.py)."
        )

    def handle(self, *args, name, **options):
        if not Gateway.objects.filter(agent__name=name).exists():
            explain(f"There is no MCP gateway named {name!r}; add one in the admin (MCP gateway).")
        anyio.run(self._serve, name)

    async def _serve(self, name: str) -> None:
        server = gateway_server(name)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
