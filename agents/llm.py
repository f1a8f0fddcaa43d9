"""The model client: chat completions with tools, through the openai package only."""

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import cast

import openai
from django.conf import settings
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

from approvals.audit import observers
from approvals.services import ProposedCall

log = logging.getLogger(__name__)

DEMO_BASE_URL = "http://127.0.0.1:8765/v1"


class ModelError(Exception):
    """The model could not be reached or answered nonsense, after retries."""


@dataclass(frozen=True)
class Reply:
    content: str
    calls: list[ProposedCall]


def base_url() -> str | None:
    if settings.OPENAI_BASE_URL:
        return settings.OPENAI_BASE_URL
    return None if settings.OPENAI_API_KEY else DEMO_BASE_URL


_clients: dict[tuple, openai.OpenAI] = {}


def client() -> openai.OpenAI:
    """One client per process and configuration, so its HTTP connections are kept between model turns.

    Keyed by the process id too: a client made before a fork (Celery's prefork pool) is not shared with children.
    """
    key = (os.getpid(), settings.OPENAI_API_KEY, base_url(), settings.OPENAI_TIMEOUT)
    if key not in _clients:
        # Retries are ours (below), so malformed answers are retried like 5xx.
        _clients[key] = openai.OpenAI(
            api_key=settings.OPENAI_API_KEY or "demo-key", base_url=key[2], timeout=key[3], max_retries=0
        )
    return _clients[key]


RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError, openai.RateLimitError)


def _parse(response) -> Reply:
    try:
        message = response.choices[0].message
        calls = [
            ProposedCall(call_id=str(c.id), name=str(c.function.name), raw_arguments=c.function.arguments or "")
            for c in (message.tool_calls or [])
        ]
        return Reply(content=message.content or "", calls=calls)
    except (AttributeError, IndexError, TypeError) as exc:
        raise ValueError(f"malformed response from the model: {exc}")


def complete(
    messages: list[dict], tools: list[dict], *, attempts: int | None = None, backoff: float | None = None
) -> Reply:
    attempts = attempts or settings.OPENAI_MAX_RETRIES + 1
    backoff = settings.MODEL_RETRY_BACKOFF if backoff is None else backoff
    last_error = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        started = time.perf_counter()
        try:
            response = client().chat.completions.create(
                model=settings.OPENAI_MODEL,
                # The API's JSON shapes, built as plain dicts (Message.as_openai, Tool.openai_spec): approvals/
                # knows nothing of the openai package and its types.
                messages=cast(list[ChatCompletionMessageParam], messages),
                tools=cast(list[ChatCompletionToolUnionParam], tools) or openai.omit,
                parallel_tool_calls=True if tools else openai.omit,
            )
            reply = _parse(response)
            observers.measured("model_call", time.perf_counter() - started)
            return reply
        except RETRYABLE as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        except (ValueError, json.JSONDecodeError) as exc:
            last_error = str(exc)
        except openai.APIStatusError as exc:
            observers.measured("model_call", time.perf_counter() - started, error="APIStatusError")
            raise ModelError(f"the model refused the request ({exc.status_code}): {exc.message}")
        except openai.OpenAIError as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        observers.measured("model_call", time.perf_counter() - started, error=last_error.split(":")[0])
        log.warning("model call failed (attempt %s of %s): %s", attempt + 1, attempts, last_error)
    raise ModelError(f"the model failed after {attempts} attempts: {last_error}")
