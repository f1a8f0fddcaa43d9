"""The high-impact gate: friction where the risk is.

A call is high impact when its tool's setting says so for every call (ToolSetting.high_impact) or when the
policy rule that sent it to review says so for the calls it matches (PolicyRule.high_impact, kept in the call's
policy). Its card then has no default button (Approve and Reject look alike, nothing is focused), Approve is
enabled only after ToolSetting.high_impact_seconds on the card (a countdown), and, when the setting names a
confirm_field, the reviewer types that argument's value (the amount, the recipient, the record id) to approve.

The server decides, not the page: the card carries a signed token of when it was shown (`shown_token`), and
`problems()` refuses an approval (or an edit) that comes too early, with a wrong or missing typed value, or
without a card at all — a batch approval or a chat button: a high-impact call is approved on its own card.
"""

import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.core import signing

from approvals.models import ToolCall
from approvals.policy import snapshot as policy_snapshot
from approvals.tools import registry

SALT = "reviewhub.friction.shown"
DEFAULT_SECONDS = 10  # on the card before Approve, where the tool's setting names no time
MAX_TOKEN_AGE = 24 * 3600  # a card shown more than a day ago is shown again


@dataclass(frozen=True)
class Proof:
    """What a decision brings from its card: when it was shown and what was typed (for the high-impact gate), and
    whether its facts were in view (for the trail)."""

    token: str = ""
    typed: str = ""
    facts_in_view: bool | None = None  # whether the card's facts were on screen before deciding (card.js)


@dataclass(frozen=True)
class Friction:
    seconds: int
    confirm_field: str  # "" when nothing is typed
    expected: str  # the value to type, as the card shows it

    @property
    def confirm_label(self) -> str:
        return self.confirm_field.replace("_", " ")


def _shown_value(tool_name: str, field: str, value) -> str:
    tool = registry.get(tool_name)
    if tool is not None and field in tool.money_fields:
        try:
            return f"{Decimal(str(value)):.2f}"
        except InvalidOperation:
            pass
    return str(value)


def friction_for(
    call: ToolCall, arguments: dict | None = None, *, rule_says: bool = False, fresh: bool = True
) -> Friction | None:
    """The gate on approving `call` with `arguments` (its arguments under review by default), or None.
    `rule_says`: the policy evaluated for these arguments marks them high impact; not `fresh`: policy was just
    read by this thread (policy_snapshot.tool_setting)."""
    setting = policy_snapshot.tool_setting(call.tool_name, fresh=fresh)
    marked = setting.high_impact or rule_says or bool((call.policy or {}).get("high_impact"))
    if not marked or call.kind != ToolCall.Kind.CALL:
        return None
    arguments = call.review_arguments if arguments is None else arguments
    field = setting.confirm_field if setting.confirm_field in (arguments or {}) else ""
    expected = _shown_value(call.tool_name, field, arguments[field]) if field else ""
    seconds = DEFAULT_SECONDS if setting.high_impact_seconds is None else setting.high_impact_seconds
    return Friction(seconds=seconds, confirm_field=field, expected=expected)


def shown_token(call: ToolCall) -> str:
    """Signed: this call's card was shown now. Posted back with Approve."""
    return signing.dumps({"call": call.pk, "at": time.time()}, salt=SALT, compress=True)


def seconds_shown(call: ToolCall, token: str) -> float | None:
    """How long ago this call's card was shown, by its token; None for a token that is not this call's."""
    try:
        data = signing.loads(token or "", salt=SALT, max_age=MAX_TOKEN_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("call") != call.pk:
        return None
    return time.time() - float(data.get("at", 0))


def _same(typed: str, expected: str) -> bool:
    typed, expected = typed.strip(), expected.strip()
    try:
        return Decimal(typed.lstrip("$").replace(",", "")) == Decimal(expected)
    except InvalidOperation:
        return typed.casefold() == expected.casefold()


def problems(friction: Friction, call: ToolCall, proof: Proof | None) -> dict[str, list[str]]:
    """Why this approval of a high-impact call is refused, field by field ({} when it may go ahead)."""
    proof = proof or Proof()
    shown = seconds_shown(call, proof.token)
    if shown is None:
        return {"approve": ["This call is high impact: approve it on its own card, after reading it."]}
    if shown < friction.seconds:
        wait = max(1, round(friction.seconds - shown))
        return {"approve": [f"This call is high impact: read the card for {wait} more second(s), then approve."]}
    if friction.confirm_field and not _same(proof.typed, friction.expected):
        return {"confirm": [f"Type the {friction.confirm_label} exactly as the call names it: {friction.expected}."]}
    return {}
