import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from approvals import roles

PASSWORD_VARIABLE = "REVIEWHUB_NEW_PASSWORD"


class Command(BaseCommand):
    help = (
        "Make a person who reviews calls (in the reviewers group), or with --auditor one who reads the record. "
        "The password is asked for, or read from the REVIEWHUB_NEW_PASSWORD variable."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--group", action="append", default=[], help="a team group that narrows the calls they decide (repeat)"
        )
        parser.add_argument("--auditor", action="store_true", help="an auditor: reads everything, changes nothing")

    def handle(self, *args, username, email, group, auditor, **options):
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            raise CommandError(f"There is a user named {username!r} already; choose another name.")
        teams = self._groups(group)
        password = self._password(username)
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password, is_staff=True)
            role = roles.auditors_group() if auditor else roles.reviewers_group()
            user.groups.add(role, *teams)
        joined = ", ".join(g.name for g in [role, *teams])
        self.stdout.write(f"Made {username} ({joined}). They log in at /login/.")

    def _groups(self, names: list[str]) -> list[Group]:
        found = {g.name: g for g in Group.objects.filter(name__in=names)}
        missing = [name for name in names if name not in found]
        if missing:
            known = ", ".join(Group.objects.order_by("name").values_list("name", flat=True)) or "none yet"
            raise CommandError(f"No group named {', '.join(missing)} (groups: {known}). Make it in the admin first.")
        return [found[name] for name in names]

    def _password(self, username: str) -> str:
        password = os.environ.get(PASSWORD_VARIABLE)
        if password is None:
            if not sys.stdin.isatty():
                raise CommandError(f"No password: set {PASSWORD_VARIABLE}, or run this in a terminal to be asked.")
            password = getpass.getpass(f"Password for {username}: ")
            if password != getpass.getpass("Again: "):
                raise CommandError("The two passwords differ; nothing was made.")
        try:
            validate_password(password, user=get_user_model()(username=username))
        except ValidationError as exc:
            raise CommandError("Password: " + " ".join(exc.messages))
        return password
