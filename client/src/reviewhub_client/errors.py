"""Errors the client raises."""


class ReviewHubError(Exception):
    """Base class of the client's errors."""


class ApiError(ReviewHubError):
    """A 4xx or 5xx answer: the status, the server's sentence and its field errors ({"field.path": [messages]})."""

    def __init__(self, status: int, detail: str, errors: dict[str, list[str]] | None = None):
        self.status, self.detail, self.errors = status, detail, errors or {}
        fields = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in self.errors.items())
        super().__init__(f"{status} {detail}" + (f" ({fields})" if fields else ""))


class NotApproved(ReviewHubError):
    """The call has no approving decision (pending, rejected, expired...): it must not run."""


class ToolFailed(ReviewHubError):
    """The call was executed by another process and its tool reported a failure; the output is its message."""


class WebhookInvalid(ReviewHubError):
    """A webhook whose signature, timestamp or body does not verify."""
