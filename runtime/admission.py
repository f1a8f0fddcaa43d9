"""New work turned away at the door while the process is behind: a proposal that would wait longer than
WEB_QUEUE_LIMIT_SECONDS for a request slot (runtime/slots.py) is answered at once with 503 and Retry-After,
before Django or the database sees it. The client (reviewhub_client) waits that long, with jitter, and sends
it again; with its idempotency key a proposal sent twice is still one call.

Without it, a fleet proposing faster than the process can answer queued without bound: 1,000 agents proposing
167 times a second where two cores answer 40 waited 13 s at the median and 94 s at the p99 for their answer
(bench/README.md, issue 26), past the client's 10 s timeout, whose retry added to the line.

Only new work is turned away: a proposal and a turn to review. What finishes work already let in (a claim, a
lease, a result), every read (a long-poll, an agent's look at its call) and every request of a person (a
reviewer's decision, a page) wait their turn as before, so that what was let in goes through.
"""

import json
import math

from django.conf import settings

NEW_WORK = frozenset({("POST", "/api/v1/calls"), ("POST", "/api/v1/turns")})


def is_new_work(scope) -> bool:
    return (scope.get("method"), scope.get("path")) in NEW_WORK


MOST_RETRY_AFTER = 10  # seconds: a write that held its slot for long once must not send the fleet away for minutes


def retry_after(expected_wait: float) -> int | None:
    """Seconds a new proposal should come back after (the line ahead of it is gone by then), when it would wait
    longer than the limit; else None."""
    limit = settings.WEB_QUEUE_LIMIT_SECONDS
    if limit <= 0 or expected_wait <= limit:
        return None
    return min(MOST_RETRY_AFTER, max(1, math.ceil(expected_wait)))


async def turn_away(send, seconds: int) -> None:
    """A 503 with Retry-After and the API's error body ({"detail": ...}), its request body left unread."""
    detail = f"ReviewHub is busy: this would wait about {seconds} s for its turn. Send it again after {seconds} s."
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(seconds).encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
