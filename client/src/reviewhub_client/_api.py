"""The requests of API v1, shared by the sync and the async client: each function returns what to send, and
`parse` turns the answer into a model or an ApiError."""

import json
import random
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2 as httpx
from pydantic import BaseModel, TypeAdapter

from .errors import ApiError

PREFIX = "/api/v1"
MAX_WAIT = 60  # seconds: the longest long-poll the server holds
BUSY_TIMEOUT = 120.0  # seconds a client keeps sending again a request answered 503/429 with Retry-After

M = TypeVar("M")


@dataclass(frozen=True)
class Spec:
    method: str
    path: str
    json: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None  # None: the client's default


def declare_tool(name: str, **fields: Any) -> Spec:
    body = {key: value for key, value in fields.items() if value is not None}
    return Spec("PUT", f"{PREFIX}/tools/{name}", body)


def list_tools() -> Spec:
    return Spec("GET", f"{PREFIX}/tools")


def propose(**fields: Any) -> Spec:
    return Spec("POST", f"{PREFIX}/calls", {key: value for key, value in fields.items() if value is not None})


def get_call(call_id: int, wait: float = 0) -> Spec:
    wait = max(0, min(MAX_WAIT, int(wait)))
    params = {"wait": wait} if wait else {}
    return Spec("GET", f"{PREFIX}/calls/{call_id}", params=params, timeout=(wait + 15) if wait else None)


def claim(call_id: int, execution_key: str) -> Spec:
    return Spec("POST", f"{PREFIX}/calls/{call_id}/claim", {"execution_key": execution_key})


def renew(call_id: int, execution_key: str) -> Spec:
    return Spec("POST", f"{PREFIX}/calls/{call_id}/lease", {"execution_key": execution_key})


def report(call_id: int, execution_key: str, ok: bool, output: str) -> Spec:
    return Spec(
        "POST", f"{PREFIX}/calls/{call_id}/result", {"execution_key": execution_key, "ok": ok, "output": output}
    )


def add_webhook(url: str) -> Spec:
    return Spec("POST", f"{PREFIX}/webhooks", {"url": url})


def tool_output(output: Any) -> str:
    """A tool's return value as the model reads it: text as is, anything else as JSON (never Python's repr)."""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def request_kwargs(spec: Spec) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"params": spec.params}
    if spec.json is not None:
        kwargs["json"] = spec.json
    if spec.timeout is not None:
        kwargs["timeout"] = spec.timeout
    return kwargs


def parse(response: httpx.Response, model: Any) -> Any:
    """The answer as `model` (a pydantic model class or a type such as list[Tool]); an ApiError for 4xx/5xx."""
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        detail = str(body.get("detail") or response.reason_phrase or "error")
        errors = body.get("errors") if isinstance(body.get("errors"), dict) else {}
        raise ApiError(response.status_code, detail, errors, retry_after(response))
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_validate(response.json())
    return TypeAdapter(model).validate_python(response.json())


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429 or 503 asks the client to wait before sending the request again (Retry-After in
    seconds; a date, or no header, asks nothing)."""
    value = response.headers.get("retry-after", "").strip()
    if response.status_code in (429, 503) and value.isdigit():
        return float(value)
    return None


def busy_backoff(exc: Exception) -> bool | float:
    """stamina's backoff hook: a request answered 429 or 503 with Retry-After (the server could not take it now:
    its database refused a connection, say) is sent again after that wait and up to half as long again, so that
    the agents turned away together do not all come back in the same instant. Nothing else is sent again."""
    if isinstance(exc, ApiError) and exc.retry_after is not None:
        return busy_wait(exc.retry_after)
    return False


def busy_wait(retry_after: float) -> float:
    return retry_after * random.uniform(1.0, 1.5)


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": "reviewhub-client/0.1"}
