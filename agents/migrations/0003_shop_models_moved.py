"""The demo shop's models moved to the shop app (its migration 0001 takes them over, tables and rows kept)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("agents", "0002_refund_rule"), ("shop", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name=name)
                for name in ("Refund", "OrderNote", "Order", "OutgoingEmail", "Customer")
            ],
        )
    ]
