"""A database made before the shop was an app of its own keeps its rows: the tables are renamed, not remade."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def test_the_shops_rows_from_before_the_move_are_the_shop_apps_rows_after_it():
    migrate([("shop", None)])  # back to before the move: the agents_* tables
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO agents_customer (name, email, customer_since)"
                " VALUES ('Old Timer', 'old@example.com', '2020-01-01')"
            )
            cursor.execute("SELECT id FROM agents_customer WHERE email = 'old@example.com'")
            (customer_id,) = cursor.fetchone()
            cursor.execute(
                "INSERT INTO agents_order (number, customer_id, total, shipping, status, items, placed_at)"
                " VALUES ('A-0001', %s, 10, 0, 'delivered', 'A thing', '2020-01-02')",
                [customer_id],
            )
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    from shop.models import Order, Refund

    order = Order.objects.get(number="A-0001")
    assert order.customer.name == "Old Timer"
    Refund.objects.create(order=order, amount=5, reason="still works", idempotency_key="after-the-move")
    assert "agents_order" not in connection.introspection.table_names()
