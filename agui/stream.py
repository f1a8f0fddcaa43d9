"""Post a RunAgentInput to an AG-UI agent and read the events it streams back (Server-Sent Events).

Each `data:` payload is validated as the SDK's `Event` union (ag_ui.core), so every event is one of its
models; the SSE framing is the only thing read here. Unreachable means the agent never took the input
(no connection, or a 5xx before any event): the caller may send the same input again.
"""

from collections.abc import Iterator

import httpx
from ag_ui.core import Event
from django.conf import settings
from pydantic import TypeAdapter, ValidationError

EVENTS = TypeAdapter(Event)


class Unreachable(Exception):
    """The agent did not take the input: sending it again cannot run anything twice."""


class Broken(Exception):
    """The agent took the input, then the stream went wrong: it is not sent again by itself."""


def _data_blocks(lines: Iterator[str]) -> Iterator[str]:
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


def events(url: str, payload: dict, headers: dict[str, str]) -> Iterator:
    """The agent's events, as SDK models. Raises Unreachable or Broken."""
    timeout = httpx.Timeout(settings.AGUI_TIMEOUT_SECONDS, connect=10)
    try:
        with (
            httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False) as client,
            client.stream("POST", url, json=payload, headers=headers) as response,
        ):
            if response.status_code >= 500 or response.status_code in (408, 429):
                raise Unreachable(f"the agent answered HTTP {response.status_code}")
            if response.status_code >= 300:
                body = response.read().decode(errors="replace")[:500]
                raise Broken(f"the agent refused the input: HTTP {response.status_code} {body}")
            yield from _validated(_data_blocks(response.iter_lines()))
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise Unreachable(f"cannot connect to {url}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise Broken(f"the stream from {url} broke: {exc}") from exc


def _validated(blocks: Iterator[str]) -> Iterator:
    for block in blocks:
        try:
            yield EVENTS.validate_json(block)
        except ValidationError as exc:
            raise Broken(f"the agent sent an event that is not AG-UI: {exc.errors()[0]['msg']}") from exc
