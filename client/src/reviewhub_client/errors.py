"""Errors the client raises."""


class ReviewHubError(Exception):
    """Base class of the client's errors."""


class ApiError(ReviewHubError):
    """A 4xx or 5xx answer: the status, the server's sentence and its field errors ({"field.path": [messages]});
    `retry_after`: the seconds a 429 or 503 asked to wait before sending the request again (None: not asked)."""

    def __init__(
        self, status: int, detail: str, errors: dict[str, list[str]] | None = None, retry_after: float | None = None
    ):
        self.status, self.detail, self.errors, self.retry_after = status, detail, errors or {}, retry_after
        fields = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in self.errors.items())
        super().__init__(f"{status} {detail}" + (f" ({fields})" if fields else ""))


class NotApproved(ReviewHubError):
    """The call has no approving decision (pending, rejected, expired...): it must not run."""


class OutcomeUnknown(ReviewHubError):
    """The call's claim lapsed without a report (its process died, or went quiet longer than the lease): nobody
    knows whether the tool ran, so it must not run again. A reviewer settles it in ReviewHub (it ran, run it now,
    or fail the run); ask for the call again later to learn which."""

    def __init__(self, call_id: int, detail: str = ""):
        self.call_id = call_id
        super().__init__(
            detail
            or f"call {call_id}: its outcome is unknown (the claim lapsed without a report); a reviewer settles it"
        )


class ToolFailed(ReviewHubError):
    """The call was executed by another process and its tool reported a failure; the output is its message."""


class WebhookInvalid(ReviewHubError):
    """A webhook whose signature, timestamp or body does not verify."""
