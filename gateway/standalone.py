"""Starting the stdio gateway from an MCP client's minimal environment (the client passes a few variables and no
working directory): its settings come from a file named by `--env-file PATH` or REVIEWHUB_ENV_FILE, and a
gateway that cannot start says why on stderr and, to the client, as the MCP error of each request.

manage.py calls start() before Django loads its settings; nothing here imports Django at module level.
"""

import json
import os
import sys

ENV_FILE = "REVIEWHUB_ENV_FILE"
NOT_STARTED = -32603  # JSON-RPC's internal error: the server could not do what was asked


def env_file_path(argv: list[str]) -> str:
    """The settings file named by --env-file (PATH or =PATH) or the REVIEWHUB_ENV_FILE variable, or ""."""
    for index, arg in enumerate(argv):
        if arg == "--env-file" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--env-file="):
            return arg.partition("=")[2]
    return os.environ.get(ENV_FILE, "")


def env_file_read(path: str) -> dict[str, str]:
    """NAME=value lines (blank lines, # comments and a leading `export ` allowed; quotes around a value dropped)."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except OSError as exc:
        raise RuntimeError(f"The settings file {path!r} named by --env-file or {ENV_FILE} cannot be read: {exc}")
    values = {}
    for number, line in enumerate(lines, 1):
        line = line.strip().removeprefix("export ").strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise RuntimeError(f"{path}, line {number}: expected NAME=value, found {line!r}.")
        values[name.strip()] = value.strip().strip("'\"")
    return values


def _check_database() -> None:
    from django.conf import settings
    from django.db import connection

    try:
        connection.ensure_connection()
    except Exception as exc:
        where = "DATABASE_URL" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "the database"
        raise RuntimeError(f"The gateway cannot reach {where} ({exc.__class__.__name__}: {exc}).".strip()) from exc
    finally:
        connection.close()


def start(argv: list[str]) -> None:
    """Load the settings file (its values fill what the environment lacks), set Django up and reach the database;
    on any failure, explain it (stderr and MCP errors) and exit."""
    try:
        path = env_file_path(argv)
        for name, value in (env_file_read(path) if path else {}).items():
            os.environ.setdefault(name, value)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
        import django

        django.setup()
        _check_database()
    except Exception as exc:
        explain(f"The ReviewHub MCP gateway could not start: {exc}")


def explain(message: str) -> None:
    """Say `message` on stderr, answer every request of the client with it as an MCP error, and exit when the
    client closes the connection."""
    print(message, file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if isinstance(request, dict) and "id" in request and "method" in request:
            answer = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": NOT_STARTED, "message": message}}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    sys.exit(1)
