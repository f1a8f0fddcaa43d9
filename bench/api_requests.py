"""CPU of one agent API request in one process, through the ASGI application uvicorn runs (reviewhub.asgi: the
request slots, the handler, the middleware), one request after another. Four kinds, in blocks of --requests:

  GET /api/v1/tools                   a sync view
  GET /api/v1/calls/{id}              the long-poll's view (async), no wait
  GET /api/v1/calls/{id}?wait=0.02    a long-poll whose wait runs out (the call stays pending)
  POST /api/v1/calls                  a proposal in a new thread (its push's work in this process included)

Printed per kind and round: CPU ms per request (time.process_time: every thread of this process, so the client's
share too, the same for every version), wall ms, and the hops to a thread (sync_to_async) per request, counted
in a last pass of its own. PostgreSQL (--database-url, created if missing); no Redis: the channel layer is in
memory and after-commit work runs in this process.

    .venv/bin/python bench/api_requests.py --requests 150 --rounds 3
"""

import argparse
import asyncio
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.agents_waiting import TOOL  # noqa: E402
from bench.common import setup_django  # noqa: E402

DB = "postgres://postgres@127.0.0.1:5432/reviewhub_bench_api_requests"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150, help="requests of each kind per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DB))
    return parser.parse_args()


def prepare() -> tuple[str, int]:
    """An agent's token, with its tool declared and one call pending: (token, the call's id)."""
    from django.test import Client

    from approvals.models import ToolCall
    from remote.services import agent_get_or_create
    from remote.tokens import token_create

    ToolCall.objects.filter(status=ToolCall.Status.PENDING).update(status=ToolCall.Status.CANCELLED)
    token = token_create(agent=agent_get_or_create(name="bench-api-requests")[0])[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.put("/api/v1/tools/issue_refund", TOOL, content_type="application/json").status_code == 200
    answer = client.post("/api/v1/calls", proposal(f"pending-{time.time()}"), content_type="application/json")
    assert answer.status_code == 201, answer.content
    return token, answer.json()["id"]


def proposal(key: str) -> dict:
    return {
        "thread_id": f"bench-{key}",
        "tool": "issue_refund",
        "arguments": {"order_id": "A-1001", "amount": 12},
        "reasoning": "The customer asked for a refund.",
        "idempotency_key": key,
    }


def kinds(call_id: int) -> dict:
    stamp = time.strftime("%H%M%S")
    count = iter(range(10**9))
    return {
        "GET tools": lambda http: http.get("/api/v1/tools"),
        "GET call": lambda http: http.get(f"/api/v1/calls/{call_id}"),
        "GET call, wait runs out": lambda http: http.get(f"/api/v1/calls/{call_id}", params={"wait": 0.02}),
        "POST calls": lambda http: http.post("/api/v1/calls", json=proposal(f"{stamp}-{next(count)}")),
    }


async def timed(http, send, requests: int) -> tuple[float, float]:
    """CPU and wall ms per request."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        answer = await send(http)
        assert answer.status_code in (200, 201), answer.text
    return (time.process_time() - cpu) * 1000 / requests, (time.perf_counter() - wall) * 1000 / requests


async def hops(http, send, requests: int = 5) -> float:
    from asgiref import sync

    made = 0
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        nonlocal made
        made += 1
        return await original(self, *args, **kwargs)

    sync.SyncToAsync.__call__ = counted  # type: ignore[method-assign]
    try:
        for _ in range(requests):
            await send(http)
    finally:
        sync.SyncToAsync.__call__ = original  # type: ignore[method-assign]
    return made / requests


async def measure(args, token: str, call_id: int) -> None:
    import httpx

    from reviewhub.asgi import application

    transport = httpx.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as http:
        sends = kinds(call_id)
        for send in sends.values():
            await timed(http, send, 20)  # warm-up
        gc.collect()
        gc.freeze()  # as reviewhub/asgi.py does
        for round_ in range(1, args.rounds + 1):
            for name, send in sends.items():
                cpu, wall = await timed(http, send, args.requests)
                load = os.getloadavg()[0]
                print(f"round {round_}  {name:<24} CPU {cpu:6.2f} ms  wall {wall:6.2f} ms  (load {load:.2f})")
        for name, send in sends.items():
            print(f"hops per request  {name:<24} {await hops(http, send):.0f}")


def main() -> None:
    args = parse_args()
    setup_django(args.database_url, LOG_LEVEL="ERROR")
    token, call_id = prepare()
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), f"load {os.getloadavg()}")
    asyncio.run(measure(args, token, call_id))


if __name__ == "__main__":
    main()
