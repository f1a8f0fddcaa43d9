"""Revision rounds: the same tool (or the same checkpoint) proposed again in a run after a reviewer sent it back.

Which earlier call a new proposal revises (link_revision): among the earlier calls of the same run with the
same tool name (a checkpoint's tool name is the checkpoint's), the latest one that reached a person or ran
(calls the gate refused before anyone was asked, invalid or forbidden, are skipped: they were the model's own
false starts). If a reviewer rejected that call (a reject, or a respond: a reject with guidance for the agent),
the new call is its revision: it links to it (`ToolCall.revision_of`) and counts one more round
(`ToolCall.revision`, 1 for a first proposal). Anything else on the latest earlier call starts over at round 1:
it was approved, edited, run without review, expired, cancelled or is still pending, so nobody asked for a
revision. Calls proposed in one step (parallel calls) do not see each other; two calls of one tool in the step
after a reject both revise it. The kind is not compared: code that sets a pause's kind after the gate built it
still gets its rounds, and a model turn is never rejected, so it never starts a chain.

The gate calls link_revision for every call it holds for review, and a remote agent's proposals go through the
same gate (remote/services/calls.py), so every kind of pause held there gets rounds without code of its own.
Whatever stores a pause another way calls link_revision(call) on the unsaved call before storing it, and
records what it returns in the proposal's audit payload.

Not to be confused with `ToolCall.review_round`: that counts the times one call returned to the queue because
its facts or the policy changed before it ran. The UI says "round 2" for a revision and "back in the queue" /
"re-review" for that.
"""

import difflib
import re
from dataclasses import dataclass, field

from django.db.models import Count, Exists, Max, OuterRef, Q

from approvals.access import shown_on_card_of
from approvals.lib.text import arguments_diff
from approvals.models import Decision, ToolCall

REFUSED = (ToolCall.Status.INVALID, ToolCall.Status.FORBIDDEN)


def _sent_back():
    """A reviewer's reject (or respond) settled the call (after a return to the queue, only the last round's
    decision is final)."""
    return Exists(
        Decision.objects.filter(
            tool_call=OuterRef("pk"), final=True, verdict=Decision.Verdict.REJECT, reviewer__isnull=False
        )
    )


def revised_call(call: ToolCall) -> ToolCall | None:
    """The earlier call that `call` is a revision of, or None for a first proposal (the module's rule). One query."""
    earlier = ToolCall.objects.filter(run_id=call.run_id, tool_name=call.tool_name).exclude(status__in=REFUSED)
    if call.pk is not None:
        earlier = earlier.filter(pk__lt=call.pk)
    latest = (
        earlier.annotate(sent_back=_sent_back())
        .only("pk", "call_id", "status", "revision")
        .order_by("-created_at", "-pk")
        .first()
    )
    if latest is None or latest.status != ToolCall.Status.REJECTED or not latest.sent_back:
        return None
    return latest


def link_revision(call: ToolCall) -> dict:
    """Link a call about to be stored to the call it revises. Returns what its proposal's audit event records
    ({} for a first proposal)."""
    previous = revised_call(call)
    if previous is None:
        return {}
    call.revision_of, call.revision = previous, previous.revision + 1
    return {"revision": call.revision, "revision_of": previous.pk, "revision_of_call_id": previous.call_id}


# --- the difference between two rounds ----------------------------------------------------------------

TEXT_LENGTH = 60  # a string value at least this long, or of several lines, is compared word by word
MAX_TOKENS = 4000  # longer texts are compared line by line
WORDS = re.compile(r"\S+|\s+")


def is_text(*values) -> bool:
    """Whether a changed value reads as text (a draft, an email body) rather than as a field."""
    strings = [v for v in values if v is not None]
    return (
        bool(strings)
        and all(isinstance(v, str) for v in strings)
        and any(len(v) >= TEXT_LENGTH or "\n" in v for v in strings)
    )


def _tokens(before: str, after: str) -> tuple[list[str], list[str]]:
    words = WORDS.findall(before), WORDS.findall(after)
    if len(words[0]) + len(words[1]) <= MAX_TOKENS:
        return words
    return before.splitlines(keepends=True), after.splitlines(keepends=True)


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """The text as a list of ("same" | "del" | "ins", text) parts, word by word (line by line when long).
    Mere whitespace between two changes joins them, so a changed phrase reads as one. The parts are plain
    text: the template escapes each."""
    a, b = _tokens(before or "", after or "")
    chunks: list[list] = []  # [old text, new text, equal]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op != "equal" and len(chunks) >= 2 and chunks[-1][2] and not chunks[-1][0].strip():
            space = chunks.pop()[0]
            chunks[-1][0] += space + old
            chunks[-1][1] += space + new
        else:
            chunks.append([old, new, op == "equal"])
    parts = []
    for old, new, equal in chunks:
        parts += [("same", old)] if equal else [(op, text) for op, text in (("del", old), ("ins", new)) if text]
    return parts


PART_TAGS = {"del": "del", "ins": "ins", "same": "span"}


def marked_parts(parts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """word_diff's parts as the card marks them up: (HTML element, text), <del> and <ins> for the changes."""
    return [(PART_TAGS[op], text) for op, text in parts]


@dataclass(frozen=True)
class PreviousRound:
    """What a revision's card shows of the round before it."""

    number: int  # this call's round
    previous: ToolCall
    decision: Decision | None
    visible: bool  # False: the previous round was for another group; only its existence is shown
    fields: list[dict] = field(default_factory=list)  # the previous arguments, each {"name", "value", "text"}
    changes: list[dict] = field(default_factory=list)  # fields changed since, arguments_diff's rows
    text_changes: list[dict] = field(default_factory=list)  # texts changed since, each {"name", "parts"}
    earlier: list[ToolCall] = field(default_factory=list)  # the rounds before the previous one, oldest first

    @property
    def sent_back_with_guidance(self) -> bool:
        return bool(self.decision and self.decision.guidance)

    @property
    def sent_back_label(self) -> str:
        return "Sent back with guidance" if self.sent_back_with_guidance else "Rejected"


def _earlier_rounds(previous: ToolCall, limit: int = 20) -> list[ToolCall]:
    chain: list[ToolCall] = []
    call = previous
    while call.revision_of_id is not None and len(chain) < limit:
        call = ToolCall.objects.only("pk", "revision", "revision_of_id").get(pk=call.revision_of_id)
        chain.append(call)
    return chain[::-1]


def previous_round(call: ToolCall) -> PreviousRound | None:
    """The round before this call, for its card; None for a first proposal."""
    if call.revision_of_id is None:
        return None
    previous = ToolCall.objects.select_related("review_group").get(pk=call.revision_of_id)
    if not shown_on_card_of(call, previous):
        return PreviousRound(call.revision, previous, None, visible=False)
    before, after = previous.arguments or {}, call.arguments or {}
    changes = arguments_diff(before, after)
    return PreviousRound(
        call.revision,
        previous,
        previous.final_decision(),
        visible=True,
        fields=[{"name": k, "value": v, "text": is_text(v)} for k, v in sorted(before.items())],
        changes=[c for c in changes if not is_text(c["before"], c["after"])],
        text_changes=[
            {"name": c["name"], "parts": marked_parts(word_diff(c["before"] or "", c["after"] or ""))}
            for c in changes
            if is_text(c["before"], c["after"])
        ],
        earlier=_earlier_rounds(previous),
    )


# --- rounds per tool (the insight page) ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolRounds:
    tool: str
    reviewed: int  # first proposals held for a person
    revised: int  # proposals sent back and proposed again: they needed a second round or more
    most: int  # the most rounds one proposal took

    @property
    def percent(self) -> int | None:
        return min(100, round(100 * self.revised / self.reviewed)) if self.reviewed else None


def rounds_per_tool(calls) -> list[ToolRounds]:
    """Per tool, over these calls (the insight page's window): how many first proposals a person reviewed, how
    many of them needed a second round or more, and the most rounds (model turns are no tool's: left out).
    One query."""
    first = Q(revision=1) & ~Q(status__in=REFUSED)
    rows = (
        calls.exclude(kind=ToolCall.Kind.TURN)
        .values("tool_name")
        .annotate(
            held=Count("pk", filter=first),
            auto=Count("pk", filter=first & Q(policy__action="run")),
            revised=Count("revision_of", filter=Q(revision=2), distinct=True),
            most=Max("revision"),
        )
        .order_by("tool_name")
    )
    found = [ToolRounds(r["tool_name"], r["held"] - r["auto"], r["revised"], r["most"] or 1) for r in rows]
    return [r for r in found if r.reviewed or r.revised]
