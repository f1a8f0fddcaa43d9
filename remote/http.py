"""The API's edges: the body parser (size, JSON, storable values), token auth, and every error as one shape.

Every 4xx body is {"detail": sentence, "errors": {field path: [messages]}} (docs/api.md).
"""

import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import Http404
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer

from approvals.lib import storable

from .errors import ApiError, Invalid, TooLarge, invalid_fields
from .tokens import agent_for_token

log = logging.getLogger(__name__)

UNAVAILABLE = "The database cannot take this request now; try again in a moment (a retry with the same key is safe)."
UNAUTHORIZED = "A valid agent token is required: Authorization: Bearer rh_… (session cookies are not accepted)."


class StorableParser(Parser):
    """JSON read with approvals.lib.storable's rules: what the database cannot store is refused, field by field."""

    def parse_body(self, request):
        if len(request.body) > settings.REVIEWHUB_API_MAX_BODY_BYTES:
            raise TooLarge(f"The body is larger than {settings.REVIEWHUB_API_MAX_BODY_BYTES} bytes.")
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError("The body is not UTF-8.")
        try:
            data = storable.load_json(text)
        except storable.Unreadable as exc:
            if "nested too deeply" in str(exc):
                raise Invalid(f"The body is {str(exc).removeprefix('it is ')}.", {"__all__": [str(exc)]})
            raise ApiError(f"The body is not valid JSON: {exc}.")
        problems = storable.json_problems(data)
        if problems:
            raise invalid_fields(problems)
        return data


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        agent = agent_for_token(token)
        if agent is not None:
            request.agent = agent
        return agent


class AsyncTokenAuth(HttpBearer):
    async def authenticate(self, request, token):
        agent = await sync_to_async(agent_for_token)(token)
        if agent is not None:
            request.agent = agent
        return agent


def _field(loc: list) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] == "body":
        parts = parts[2:]  # "body", the parameter's name
    elif parts and parts[0] in ("query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "__all__"


def _message(error: dict) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "Unknown field."
    if kind == "missing":
        return "This field is required."
    return str(error.get("msg", "Invalid value."))


def _field_errors(exc: ValidationError) -> dict[str, list[str]]:
    """ninja's validation errors as the API's field paths and sentences."""
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        errors.setdefault(_field(error.get("loc", [])), []).append(_message(error))
    return errors


def error_body(detail: str, errors: dict | None = None) -> dict:
    return {"detail": detail, "errors": errors or {}}


def install(api) -> None:
    def respond(request, status, detail, errors=None):
        return api.create_response(request, error_body(detail, errors), status=status)

    @api.exception_handler(ApiError)
    def api_error(request, exc: ApiError):
        return respond(request, exc.status, exc.detail, exc.errors)

    @api.exception_handler(ValidationError)
    def validation_error(request, exc: ValidationError):
        errors = _field_errors(exc)
        first, messages = next(iter(errors.items()))
        return respond(request, 422, f"{first}: {messages[0]}", errors)

    @api.exception_handler(AuthenticationError)
    def unauthorized(request, exc):
        return respond(request, 401, UNAUTHORIZED)

    @api.exception_handler(HttpError)
    def http_error(request, exc: HttpError):
        if isinstance(exc.__cause__, ApiError):  # raised by the parser, wrapped by ninja
            return api_error(request, exc.__cause__)
        return respond(request, exc.status_code, str(exc))

    @api.exception_handler(RequestDataTooBig)
    def too_big(request, exc):
        return respond(request, 413, f"The body is larger than {settings.REVIEWHUB_API_MAX_BODY_BYTES} bytes.")

    @api.exception_handler(Http404)
    def not_found(request, exc):
        return respond(request, 404, "Not found.")

    @api.exception_handler(OperationalError)
    def unavailable(request, exc):
        """PostgreSQL refused the connection ("too many clients", a restart) or broke it off: a 503 the agent may
        retry (a proposal's idempotency key makes its retry safe), not a 500."""
        log.warning("API request answered 503: %s", exc)
        response = respond(request, 503, UNAVAILABLE)
        response["Retry-After"] = "1"
        return response
