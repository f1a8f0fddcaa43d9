from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from remote.services import agent_get_or_create
from remote.tokens import token_create


class Command(BaseCommand):
    help = "Make a token for the agent NAME (and the agent, if new). The token is printed once and never stored."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the agent's name: lower-case letters, digits, - and _")

    def handle(self, *args, name, **options):
        try:
            agent, created = agent_get_or_create(name=name)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages))
        row, token = token_create(agent=agent)
        made = "new agent" if created else "agent"
        self.stderr.write(f"Token {row.prefix}… for {made} {agent.name} (its runs are requested by {agent.user}).")
        self.stderr.write("It is shown once: keep it now. Revoke it in the admin (Agent tokens).")
        self.stdout.write(token)
