"""An upstream MCP server for the reliability harness: one tool, `refund`, that records every attempt and its
effect in EFFECTS_DIR keyed by the idempotency key its caller gives it (the `key` argument), and every effect,
so a call run twice shows as two effects. A file EFFECTS_DIR/hang-before-KEY (or hang-after-) makes the tool stop
before (after) its effect, saying so with EFFECTS_DIR/at-before-KEY (at-after-), to be killed there.

    python tests/e2e/reliability_upstream.py      # stdio, as the gateway starts it
"""

import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

shop = MCPServer("killshop")


def _stop_here(folder: Path, point: str, key: str) -> None:
    if (folder / f"hang-{point}-{key}").exists():
        (folder / f"at-{point}-{key}").touch()
        time.sleep(600)


@shop.tool(annotations=ToolAnnotations(destructiveHint=True))
def refund(order_id: str, amount: float, key: str) -> str:
    """Refund money to the customer of an order (key: the caller's idempotency key for this refund)."""
    folder = Path(os.environ["EFFECTS_DIR"])
    with open(folder / "attempts", "a") as attempts:
        attempts.write(f"{key}\n")
    _stop_here(folder, "before", key)
    with open(folder / "effects", "a") as effects:
        effects.write(f"{key}\n")
    _stop_here(folder, "after", key)
    return f"Refunded ${amount:.2f} on order {order_id}."


if __name__ == "__main__":
    shop.run()
