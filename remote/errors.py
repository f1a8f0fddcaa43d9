"""What the API answers when it refuses: a status, a sentence, and the fields at fault (docs/api.md, Errors)."""


class ApiError(Exception):
    status = 400

    def __init__(self, detail: str, errors: dict[str, list[str]] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or {}


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Invalid(ApiError):
    status = 422


class TooLarge(ApiError):
    status = 413


def invalid_fields(errors: dict[str, list[str]], prefix: str = "") -> Invalid:
    """A 422 naming each field (under `prefix`, e.g. "arguments"), its sentence naming the first."""
    named = {
        (f"{prefix}.{name}" if prefix and name != "__all__" else prefix or name): msgs for name, msgs in errors.items()
    }
    first, messages = next(iter(named.items()))
    return Invalid(f"{first}: {messages[0]}", named)
