from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agents import services
from agents.agents import registry
from approvals.lib.storable import text_problem
from approvals.services import NotAllowed


class Command(BaseCommand):
    help = "Start a run of an agent on a request."

    def add_arguments(self, parser):
        parser.add_argument("request")
        agents = registry.all()
        parser.add_argument("--agent", default=agents[0].name if agents else None, choices=registry.names())
        parser.add_argument("--user", help="Username of the requester.")
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, **options):
        if problem := text_problem(options["request"]):  # a shell can pass a lone surrogate (undecodable bytes)
            raise CommandError(f"The request {problem[0].lower()}{problem[1:]} Nothing was started.")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user {options['user']!r}.")
        try:
            run = services.run_start(
                agent_name=options["agent"], request=options["request"], requested_by=user, dry_run=options["dry_run"]
            )
        except NotAllowed as exc:
            raise CommandError(f"{options['user']} may not start runs: {exc}")
        self.stdout.write(f"Started run {run.pk}")
