from django.core.management.base import BaseCommand

from agents.model_server import ModelServer


class Command(BaseCommand):
    help = "Run the scripted OpenAI-compatible model server, with the scripts the installed apps register."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8765)

    def handle(self, *args, **options):
        server = ModelServer((options["host"], options["port"]))
        self.stdout.write(f"Scripted model server on {server.url}")
        self.stdout.flush()
        server.serve_forever()
