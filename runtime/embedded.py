"""The embedded default's one process: the database migrated, periodic work on a thread (what beat does in
production-like mode), work after commits on threads (background.py), and the ASGI server in front.

What to put in it (demo data, a scripted model, runs to start) is its caller's: shop's `demo` command."""

import socket
import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from runtime import periodic


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on host:port now (bound as uvicorn binds, with SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def check_port(host: str, port: int) -> None:
    """A port ReviewHub cannot listen on is one line naming the fix, before anything is printed."""
    if not 0 < port < 65536:
        raise CommandError(f"--port {port} is not a port (1-65535).")
    if not port_free(port, host):
        raise CommandError(
            f"Port {port} on {host} is already in use. Start on another one: make run PORT=8001"
            " (or: python manage.py demo --port 8001)."
        )


def prepare() -> None:
    """The database this process serves, migrated, and the embedded default's beat started."""
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    call_command("migrate", verbosity=0, interactive=False)
    threading.Thread(target=periodic.run_forever, daemon=True, name="periodic").start()


def serve(host: str, port: int) -> None:
    """The ASGI server, in this process, until it is stopped."""
    import uvicorn

    uvicorn.run("reviewhub.asgi:application", host=host, port=port, log_level="warning", lifespan="off")
