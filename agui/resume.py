"""The resumption seam for runs of AG-UI agents (settings.REVIEWHUB_AGUI_RESUME): a start, a decision, an
expiry or a Retry asks the background task to take the run further (agui.services.run_advance decides
whether there is anything to send: the resume goes once the last interrupt is decided)."""

from .tasks import advance_later


def run_decided(run_id: int, *, approved: bool = False) -> None:
    advance_later(run_id)
