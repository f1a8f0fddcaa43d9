from django.core.management.base import BaseCommand

from shop import demo_data


class Command(BaseCommand):
    help = "Seed the demo shop, the roles and the demo accounts (idempotent)."

    def handle(self, *args, **options):
        demo_data.seed_shop()
        users = demo_data.seed_users()
        demo_data.seed_governance()
        demo_data.seed_practice()
        self.stdout.write(f"Demo shop seeded; log in as {users['reviewer'].username} / {demo_data.DEMO_PASSWORD}")
