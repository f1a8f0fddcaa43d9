#!/usr/bin/env python
import os
import sys


def main():
    if sys.argv[1:2] == ["mcp_gateway"]:
        # An MCP client starts it with a minimal environment: its settings may come from a file, and a gateway
        # that cannot start must say why to the client, not only close the connection.
        from gateway.standalone import start

        start(sys.argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
    if sys.argv[1:2] == ["demo"]:
        # The embedded demo serves plain HTTP on 127.0.0.1 and keeps a random key in var/: the
        # settings must know before they load (settings.DEMO), so it is said here, not in the command.
        os.environ.setdefault("REVIEWHUB_DEMO", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
