#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
    if sys.argv[1:2] == ["demo"]:
        # The embedded demo serves plain HTTP on 127.0.0.1 and keeps a random key in var/: the
        # settings must know before they load (settings.DEMO), so it is said here, not in the command.
        os.environ.setdefault("REVIEWHUB_DEMO", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
