"""The demo: the embedded default (runtime/embedded.py: migrate, periodic work, the ASGI server) with the
shop's data, demo accounts and rules, the scripted model server and the demo's first runs."""

import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from agents import model_server, services
from approvals.models import Run
from runtime import embedded
from shop import agents, demo_data

MODEL_PORT = 8765


def _start_model_server() -> tuple[str, str]:
    """The scripted demo model, on 8765 or, when that is taken, on a free port: its URL, and what to print."""
    server = model_server.serve(port=MODEL_PORT if embedded.port_free(MODEL_PORT) else 0)
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
        embedded.check_port(options["host"], options["port"])
        embedded.prepare()
        demo_data.seed_shop()
        users = demo_data.seed_users()
        demo_data.seed_governance()
        demo_data.seed_practice()
        if not settings.OPENAI_API_KEY and not settings.OPENAI_BASE_URL:
            settings.OPENAI_BASE_URL, said = _start_model_server()
            self.stdout.write(said)

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
        embedded.serve(options["host"], options["port"])
