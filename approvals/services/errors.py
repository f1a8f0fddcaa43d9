"""What a reviewer's action can run into; each carries the HTTP status a view answers with."""

from django.utils import timezone

from ..models import Decision, ToolCall


class DecisionError(Exception):
    status = 400


class AlreadyDecided(DecisionError):
    status = 409

    def __init__(self, call: ToolCall, decision: Decision | None):
        self.call = call
        self.decision = decision
        if decision is not None:
            when = timezone.localtime(decision.created_at).strftime("%Y-%m-%d %H:%M:%S %Z")
            verdict = decision.label_for(call.kind).lower()
            super().__init__(f"Already {verdict} by {decision.reviewer_label} at {when}.")
        else:
            status = call.get_status_display().lower()
            super().__init__(f"This call is no longer waiting for review (it is {status}).")


class NotAllowed(DecisionError):
    status = 403


def require(verdict: tuple[bool, str]) -> None:
    """Go on only if an access rule (approvals/access/) allowed it: `require(access.can_undo(user, call))`."""
    allowed, why = verdict
    if not allowed:
        raise NotAllowed(why)


class StaleView(DecisionError):
    status = 409


class EditInvalid(DecisionError):
    """Field by field: {"amount": ["Must be at least 0."]}. "__all__" holds what belongs to no field."""

    status = 400

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("The edited arguments are not valid.")


class HighImpactRefused(EditInvalid):
    """A high-impact call approved too early, without its typed confirmation, or away from its card."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(errors)
        self.args = (next(iter(errors.values()))[0],)


class WarningNotAcknowledged(EditInvalid):
    """The facts warn against running the call as it stands: approving it needs "Approve anyway"."""

    def __init__(self, warning: str):
        super().__init__({"approve_anyway": [f"The facts warn: {warning} Approve anyway only if you are sure."]})
        self.args = (f"The facts warn: {warning} To run it as it stands, choose Approve anyway.",)


class UndoError(DecisionError):
    pass


class RuleNotProposed(DecisionError):
    """A learned rule someone asked to add is not what the decisions propose (unknown, or tampered with)."""

    status = 400


class RuleAlreadyAdded(DecisionError):
    """A rule that covers the proposal exists already: nothing is added a second time."""

    status = 409

    def __init__(self, rule):
        self.rule = rule
        state = "in shadow mode" if rule.shadow else ("live" if rule.enabled else "disabled")
        super().__init__(f"Already added as the rule “{rule.name}” ({state}): nothing was added.")
