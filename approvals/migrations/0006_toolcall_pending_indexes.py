"""Indexes for the reviewer's queue: the pending calls in the orders the triage list offers.

Partial (pending calls only), so they stay small however many decided calls the table holds, and a page
of 50 is read from the index in order instead of sorting every pending call.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("approvals", "0005_toolcall_search_indexes")]

    operations = [
        migrations.AddIndex(
            model_name="toolcall",
            index=models.Index(
                fields=["created_at", "id"], condition=models.Q(status="pending"), name="toolcall_pending_oldest"
            ),
        ),
        migrations.AddIndex(
            model_name="toolcall",
            index=models.Index(
                fields=["expires_at", "created_at", "id"],
                condition=models.Q(status="pending"),
                name="toolcall_pending_deadline",
            ),
        ),
    ]
