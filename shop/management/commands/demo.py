"""Everything the embedded default needs, in one process: migrate, seed, the
scripted model server, the agent worker threads, and the ASGI server."""

import socket
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from agents import model_server, services
from approvals.models import Run
from reviewhub import periodic
from shop import agents, demo_data

MODEL_PORT = 8765


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on host:port now (bound as uvicorn binds, with SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def _check_port(host: str, port: int) -> None:
    """A port ReviewHub cannot listen on is one line naming the fix, before anything is printed."""
    if not 0 < port < 65536:
        raise CommandError(f"--port {port} is not a port (1-65535).")
    if not _port_free(port, host):
        raise CommandError(
            f"Port {port} on {host} is already in use. Start on another one: make run PORT=8001"
            " (or: python manage.py demo --port 8001)."
        )


def _start_model_server() -> tuple[str, str]:
    """The scripted demo model, on 8765 or, when that is taken, on a free port: its URL, and what to print."""
    server = model_server.serve(port=MODEL_PORT if _port_free(MODEL_PORT) else 0)
    if server.server_address[1] != MODEL_PORT:
        return server.url, f"Port {MODEL_PORT} is taken: the scripted demo model is on {server.url} instead"
    return server.url, f"Scripted demo model on {server.url}"


class Command(BaseCommand):
    help = "Run ReviewHub with demo data on the embedded default (SQLite, no other servers)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-runs", action="store_true", help="Do not start the demo runs.")

    def handle(self, *args, **options):
        import uvicorn

        _check_port(options["host"], options["port"])
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", verbosity=0, interactive=False)
        demo_data.seed_shop()
        users = demo_data.seed_users()
        demo_data.seed_governance()
        demo_data.seed_practice()
        if not settings.OPENAI_API_KEY and not settings.OPENAI_BASE_URL:
            settings.OPENAI_BASE_URL, said = _start_model_server()
            self.stdout.write(said)
        threading.Thread(target=periodic.run_forever, daemon=True, name="periodic").start()  # what beat does

        def start_runs():
            time.sleep(1)
            if not Run.objects.filter(status__in=Run.ACTIVE).exists():
                for text in demo_data.DEMO_REQUESTS:
                    services.run_start(agent_name=agents.SUPPORT.name, request=text, requested_by=users["requester"])

        if not options["no_runs"]:
            threading.Thread(target=start_runs, daemon=True).start()
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(
            self.style.SUCCESS(
                f"\nReviewHub is at {url}\nLog in as: reviewer / {demo_data.DEMO_PASSWORD}"
                " (auditor / the same password for the admin and insight)\n"
            )
        )
        uvicorn.run(
            "reviewhub.asgi:application",
            host=options["host"],
            port=options["port"],
            log_level="warning",
            lifespan="off",
        )
