"""What a held model turn's card shows (templates/approvals/partials/turn_card.html): the transcript the model
would answer, the last few messages in view and the earlier ones folded away."""

from dataclasses import dataclass

from approvals.models import Message, ToolCall
from approvals.policy.turn_rules import rows_of

RECENT = 4


@dataclass(frozen=True)
class TurnCard:
    earlier: list[Message]
    recent: list[Message]

    @property
    def total(self) -> int:
        return len(self.earlier) + len(self.recent)


def turn_card(call: ToolCall) -> TurnCard:
    """The transcript as it was when the turn was held (up to the call's row; later rows came after the review).
    A turn of an agent that calls its own model: the transcript the agent sent with its request, as the agent's
    (untrusted)."""
    if not call.run.advancer.calls_model:
        rows = rows_of((call.agent_facts or {}).get("transcript") or [])
        return TurnCard(rows[:-RECENT], rows[-RECENT:])
    rows = list(
        Message.objects.filter(run_id=call.run_id, seq__lte=call.message.seq)
        .select_related("written_by")
        .order_by("seq")
    )
    return TurnCard(rows[:-RECENT], rows[-RECENT:])
