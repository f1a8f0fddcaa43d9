"""A small shop as an MCP server, upstream of ReviewHub's MCP gateway in the tests, the bench and docs/agents.md.

Tools: `lookup_order` (read-only), `get_balance` (read-only: what a customer may still be refunded) and
`refund` (writes a row to SQLite, so a test can count refunds), plus `close_account` (destructive, which the
tests forbid in the gateway). The SQLite file is SHOP_DB (default: shop.sqlite3 beside the working directory).

    python examples/mcp_shop_server.py                     # stdio
    python examples/mcp_shop_server.py --http --port 8765  # streamable HTTP at http://127.0.0.1:8765/mcp
"""

import argparse
import os
import sqlite3

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

ORDERS = {
    "A-1001": {"customer": "ana@example.com", "total": 49.0, "status": "delivered"},
    "A-1002": {"customer": "ben@example.com", "total": 120.0, "status": "shipped"},
}

shop = MCPServer("shop")


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(os.environ.get("SHOP_DB", "shop.sqlite3"), timeout=10)
    db.execute("CREATE TABLE IF NOT EXISTS refunds (order_id TEXT, amount REAL, reason TEXT)")
    return db


@shop.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup_order(order_id: str) -> str:
    """Look up an order: its customer, total and status."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"No order {order_id}."
    return f"Order {order_id}: {order['customer']}, total ${order['total']:.2f}, {order['status']}."


@shop.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_balance(order_id: str) -> str:
    """How much of an order may still be refunded."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"No order {order_id}."
    with _db() as db:
        refunded = db.execute("SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ?", (order_id,)).fetchone()
    return f"Order {order_id}: total ${order['total']:.2f}, refundable ${order['total'] - refunded[0]:.2f}."


@shop.tool(annotations=ToolAnnotations(destructiveHint=True))
def refund(order_id: str, amount: float, reason: str = "") -> str:
    """Refund money to the customer of an order."""
    with _db() as db:
        db.execute("INSERT INTO refunds VALUES (?, ?, ?)", (order_id, amount, reason))
    return f"Refunded ${amount:.2f} on order {order_id}."


@shop.tool(annotations=ToolAnnotations(destructiveHint=True))
def close_account(customer: str) -> str:
    """Close a customer's account for good."""
    return f"Closed the account of {customer}."


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args()
    if options.http:
        shop.run("streamable-http", host="127.0.0.1", port=options.port)
    else:
        shop.run()
