"""Everything the embedded default needs, in one process: migrate, seed, the
scripted model server, the agent worker threads, and the ASGI server."""

import socket
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from agents import model_server, services
from approvals import anchors
from approvals import services as approvals_services
from approvals.models import Run
from shop import agents, demo_data


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _periodic_loop() -> None:
    """What Celery beat does in production: deadlines, the sweep that takes stuck runs further, the audit anchors."""
    passes = (
        ("expiry", approvals_services.deadlines_apply),
        ("sweep", approvals_services.sweep_apply),
        ("audit anchor", anchors.anchor_heads),
    )
    while True:
        time.sleep(settings.SWEEP_INTERVAL_SECONDS)
        for name, apply in passes:
            try:
                apply()
            except Exception as exc:  # keep the loop alive; the next pass retries
                print(f"{name} pass failed: {exc}")


class Command(BaseCommand):
    help = "Run ReviewHub with demo data on the embedded default (SQLite, no other servers)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-runs", action="store_true", help="Do not start the demo runs.")

    def handle(self, *args, **options):
        import uvicorn

        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", verbosity=0, interactive=False)
        demo_data.seed_shop()
        users = demo_data.seed_users()
        demo_data.seed_governance()
        if not settings.OPENAI_API_KEY and not settings.OPENAI_BASE_URL:
            port = 8765 if _port_free(8765) else 0
            server = model_server.serve(port=port)
            settings.OPENAI_BASE_URL = server.url
            self.stdout.write(f"Scripted demo model on {server.url}")
        threading.Thread(target=_periodic_loop, daemon=True, name="periodic").start()

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
