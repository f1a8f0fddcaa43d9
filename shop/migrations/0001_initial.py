"""The shop's models, moved here from agents/: the state only, over the tables agents/ made (0002 renames them).

On a database migrated before the move, nothing is created: the rows stay where they are.
"""

import django.db.models.deletion
import django.utils.timezone
from decimal import Decimal
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("agents", "0002_refund_rule")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Customer",
                    options={"db_table": "agents_customer"},
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        ("email", models.EmailField(max_length=254, unique=True)),
                        ("customer_since", models.DateField()),
                    ],
                ),
                migrations.CreateModel(
                    name="OutgoingEmail",
                    options={"db_table": "agents_outgoingemail"},
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("to", models.EmailField(max_length=254)),
                        ("subject", models.CharField(max_length=300)),
                        ("body", models.TextField()),
                        ("idempotency_key", models.CharField(max_length=200, unique=True)),
                        ("sent_at", models.DateTimeField(auto_now_add=True)),
                    ],
                ),
                migrations.CreateModel(
                    name="Order",
                    options={"db_table": "agents_order"},
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("number", models.CharField(max_length=20, unique=True)),
                        ("total", models.DecimalField(decimal_places=2, max_digits=10)),
                        ("shipping", models.DecimalField(decimal_places=2, default=Decimal("0"), max_digits=10)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("processing", "Processing"),
                                    ("shipped", "Shipped"),
                                    ("delivered", "Delivered"),
                                    ("cancelled", "Cancelled"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("items", models.TextField()),
                        ("placed_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "customer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="orders", to="shop.customer"
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="OrderNote",
                    options={"db_table": "agents_ordernote"},
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("text", models.TextField()),
                        ("idempotency_key", models.CharField(max_length=200, unique=True)),
                        ("removed", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "order",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="notes", to="shop.order"
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="Refund",
                    options={"db_table": "agents_refund"},
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("amount", models.DecimalField(decimal_places=2, max_digits=10)),
                        ("reason", models.TextField()),
                        ("idempotency_key", models.CharField(max_length=200, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "order",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="refunds", to="shop.order"
                            ),
                        ),
                    ],
                ),
            ],
        )
    ]
