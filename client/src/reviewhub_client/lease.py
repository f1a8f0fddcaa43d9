"""Keeping a claim while the tool runs: a claim is a lease of `Claim.lease_seconds`, renewed here in a background
thread (or task) every third of it, so a long body keeps its claim and a dead process loses it within a lease."""

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator

from .errors import ApiError, OutcomeUnknown
from .models import UNKNOWN, Call

_KEY: contextvars.ContextVar[str] = contextvars.ContextVar("reviewhub_execution_key", default="")


def execution_key() -> str:
    """Inside a tool body run by `execute_once`: the call's execution key, the same on every run of that call.
    Hand it to a payment or mail API as its idempotency key ("" outside a body)."""
    return _KEY.get()


@contextlib.contextmanager
def running_with(key: str) -> Iterator[None]:
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def is_unknown(exc: ApiError) -> bool:
    """A 409 saying the call's claim lapsed: its outcome is unknown (or the lease is gone)."""
    return exc.status == 409 and (exc.errors.get("status") == [UNKNOWN] or "lease" in exc.errors)


def unknown_from(call_id: int, exc: ApiError) -> OutcomeUnknown:
    return OutcomeUnknown(call_id, f"call {call_id}: {exc.detail}")


def refuse_unknown(call: Call) -> None:
    if call.status == UNKNOWN:
        raise OutcomeUnknown(call.id)


class Renewer:
    """`with Renewer(renew, lease_seconds):` renews in a thread while the block runs; `lapsed` once it could not."""

    def __init__(self, renew: Callable[[], object], lease_seconds: float):
        self.renew, self.every, self.lapsed = renew, max(0.2, lease_seconds / 3), False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="reviewhub-lease", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.renew()
            except ApiError as exc:
                if is_unknown(exc) or exc.status in (404, 409):
                    self.lapsed = True
                    return
            except Exception:  # the network: try again; the lease covers two more tries
                continue

    def __enter__(self) -> "Renewer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every + 1)


class AsyncRenewer:
    """The same as an asyncio task, for `AsyncReviewHub`."""

    def __init__(self, renew: Callable[[], Awaitable[object]], lease_seconds: float):
        self.renew, self.every, self.lapsed = renew, max(0.2, lease_seconds / 3), False
        self._task: asyncio.Task | None = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.renew()
            except ApiError as exc:
                if is_unknown(exc) or exc.status in (404, 409):
                    self.lapsed = True
                    return
            except Exception:
                continue

    async def __aenter__(self) -> "AsyncRenewer":
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
