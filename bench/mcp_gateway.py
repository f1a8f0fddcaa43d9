"""MCP gateway benchmark: a read-only call through the gateway against the same call straight to the upstream.

The example shop (examples/mcp_shop_server.py) is the upstream. Each side is measured with the SDK's own
client, sequentially, after a warm-up, in two set-ups:
- stdio: "direct" starts the shop and calls lookup_order; "gateway" starts `manage.py mcp_gateway bench`
  (which starts the shop behind it) and calls the same tool through it: one more process hop each way.
- in-process: the same two, connected with the SDK's in-memory transport (the shop's server object, and the
  gateway's server with the shop's object as its upstream): the gateway's own cost, without process switches.
The extra cost is the difference of the two sides at p50 and p99. Aim: under 2 ms at p50.

    .venv/bin/python bench/mcp_gateway.py --calls 1000

Needs PostgreSQL: DATABASE_URL (default: a reviewhub_bench database on 127.0.0.1:5432, created if missing).
"""

import argparse
import asyncio
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import ensure_database  # noqa: E402

SHOP = ROOT / "examples" / "mcp_shop_server.py"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per side")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured calls first, per side")
    parser.add_argument(
        "--database-url", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reviewhub_bench")
    )
    return parser.parse_args()


def setup(args) -> None:
    """Django on the bench database, migrated, with a gateway `bench` in front of the shop over stdio."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "reviewhub.settings"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # shared with the gateway it starts
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["SHOP_DB"] = str(Path(tempfile.mkdtemp()) / "shop.sqlite3")
    import django

    django.setup()
    from django.core.management import call_command

    from gateway import services
    from gateway.models import Upstream

    call_command("migrate", verbosity=0, interactive=False)
    gateway = services.gateway_create(name="bench")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(SHOP))}"
    Upstream.objects.update_or_create(
        gateway=gateway, name="shop", defaults={"command": command, "url": "", "environment": "SHOP_DB"}
    )


async def timings(server, calls: int, warmup: int) -> list[float]:
    from mcp import Client

    async with Client(server) as client:
        for _ in range(warmup):
            await client.call_tool("lookup_order", {"order_id": "A-1001"})
        spent = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool("lookup_order", {"order_id": "A-1001"})
            spent.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result
    return spent


def percentile(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if p < 100 else max(values)


def main() -> None:
    args = parse_args()
    ensure_database(args.database_url)
    setup(args)
    from mcp.client.stdio import StdioServerParameters

    env = dict(os.environ)
    direct = StdioServerParameters(command=sys.executable, args=[str(SHOP)], env=env)
    through = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_gateway", "bench"], env=env, cwd=ROOT
    )
    report("stdio", args, direct, through)
    shop = in_process_shop()
    from gateway.server import gateway_server

    report("in-process", args, shop, gateway_server("bench"))


def in_process_shop():
    """The shop's server object; the gateway's upstream clients connect to it in memory (bench only)."""
    import importlib.util

    from mcp import Client

    from gateway import upstreams

    spec = importlib.util.spec_from_file_location("mcp_shop_server", SHOP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    upstreams.client_for = lambda _spec: Client(module.shop)
    return module.shop


def report(setup_name: str, args, direct, through) -> None:
    results = {
        label: asyncio.run(timings(server, args.calls, args.warmup))
        for label, server in [("direct", direct), ("gateway", through)]
    }
    print(f"\n{setup_name}: read-only call lookup_order, {args.calls} calls per side after {args.warmup} warm-up, ms")
    print(f"{'':10}{'p50':>8}{'p99':>8}{'mean':>8}")
    for label, values in results.items():
        print(f"{label:10}{percentile(values, 50):8.2f}{percentile(values, 99):8.2f}{statistics.mean(values):8.2f}")
    extra50 = percentile(results["gateway"], 50) - percentile(results["direct"], 50)
    extra99 = percentile(results["gateway"], 99) - percentile(results["direct"], 99)
    print(f"{'extra':10}{extra50:8.2f}{extra99:8.2f}   (aim: under 2 ms at p50)")


if __name__ == "__main__":
    main()
