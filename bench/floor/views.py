"""The barest honest proposal and read: what is left of POST /api/v1/calls and GET /api/v1/calls/{id} without
ReviewHub's rules (no schema, policy, audit trail, live push, webhook or idempotency).

POST: the bearer token checked as the API checks it (remote.tokens.agent_for_token, behind the header parsing of
django-ninja's HttpBearer), the JSON body parsed, one INSERT in a transaction, 201 {"id", "status": "pending"}.
GET: the token checked, one SELECT of the agent's row; with ?wait=N, the request gives its slot back and sleeps
for N seconds, as a long-poll of a call nobody decides does, and answers the call as read (pending).

Both are under /api/, so they run through the same ASGI handler, request slots and API middleware as the real API
(runtime/handler.py, runtime/slots.py). The table is the floor's own (ensure_table()).
"""

import asyncio
import json

from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from remote.tokens import agent_for_token
from runtime import slots

TABLE = "bench_floor_call"
UNAUTHORIZED = {"detail": "Unauthorized"}


def ensure_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, agent_id bigint NOT NULL,"
            " status text NOT NULL, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
        )


def _agent(request):
    """The token's agent, the header read as django-ninja's HttpBearer reads it; None: no valid token."""
    parts = request.headers.get("Authorization", "").split(" ")
    if parts[0].lower() != "bearer":
        return None
    return agent_for_token(" ".join(parts[1:]))


@csrf_exempt
@require_POST
def propose(request):
    agent = _agent(request)
    if agent is None:
        return JsonResponse(UNAUTHORIZED, status=401)
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"detail": "The body is not valid JSON."}, status=400)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (agent_id, status, body) VALUES (%s, 'pending', %s) RETURNING id",
            [agent.pk, json.dumps(body)],
        )
        call_id = cursor.fetchone()[0]
    return JsonResponse({"id": call_id, "status": "pending"}, status=201)


def _row(request, call_id: int) -> tuple[bool, dict | None]:
    """(whether the token is valid, the agent's call or None)."""
    agent = _agent(request)
    if agent is None:
        return False, None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, status FROM {TABLE} WHERE id = %s AND agent_id = %s", [call_id, agent.pk])
        row = cursor.fetchone()
    return True, (None if row is None else {"id": row[0], "status": row[1]})


@require_GET
async def read(request, call_id: int):
    authenticated, call = await sync_to_async(_row)(request, call_id)
    if not authenticated:
        return JsonResponse(UNAUTHORIZED, status=401)
    if call is None:
        return JsonResponse({"detail": "Not Found"}, status=404)
    try:
        wait = min(60.0, max(0.0, float(request.GET.get("wait", 0))))
    except ValueError:
        return JsonResponse({"detail": "wait is not a number."}, status=422)
    if wait > 0:
        async with slots.released():  # as the real long-poll: others' requests go on meanwhile
            await asyncio.sleep(wait)
    return JsonResponse(call)
