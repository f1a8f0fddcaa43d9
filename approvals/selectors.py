"""Read queries used in several places: the pending queue, as one user may see it.

Counts of pending calls stop at triage.COUNT_CAP + 1 (shown as "1,000+"), and the queue's facets read the
oldest COUNT_CAP + 1 pending calls only, so what they cost does not grow with the queue past that.
"""

from django.core.exceptions import EmptyResultSet
from django.db.models import Case, Exists, F, FloatField, IntegerField, OuterRef, Q, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from approvals import access
from approvals.web import triage

from .models import Decision, ToolCall
from .tools import registry

PENDING = Q(status=ToolCall.Status.PENDING)
# The queue's list: calls waiting for review, and calls whose outcome a person must settle.
WAITING = Q(status__in=(ToolCall.Status.PENDING, ToolCall.Status.OUTCOME_UNKNOWN))


def pending_calls(user):
    """The calls waiting for review that this user may see, oldest first, ready for the call panel."""
    return (
        access.visible_calls(user, ToolCall.objects.filter(PENDING))
        .select_related("run", "run__requested_by", "review_group", "reviewing_by")
        .order_by("created_at", "id")
    )


def _visible_pending(user):
    return access.visible_calls(user, ToolCall.objects.filter(PENDING))


def _visible_waiting(user):
    return access.visible_calls(user, ToolCall.objects.filter(WAITING))


def _capped_count(calls) -> RawSQL | Value:
    """How many of these calls there are, counted to COUNT_CAP + 1 at most: a subquery that stops there."""
    try:
        sql, params = calls.order_by().values("pk")[: triage.COUNT_CAP + 1].query.sql_with_params()
    except EmptyResultSet:  # calls.none(): a user who may see none
        return Value(0, IntegerField())
    return RawSQL(f"SELECT COUNT(*) FROM ({sql}) AS counted", params, output_field=IntegerField())


def pending_count(user) -> int:
    """How many calls wait for this user, as the queue lists them (an outcome to settle too), counted to
    COUNT_CAP + 1 at most (count_label shows "1,000+")."""
    return _visible_waiting(user).order_by()[: triage.COUNT_CAP + 1].count()


def sees_calls_and_pending_count(user, call_ids: list[int]) -> tuple[set[int], int]:
    """Which of these calls this user may see, and how many calls wait for them (to COUNT_CAP + 1) if they
    may see any: one query."""
    calls = access.visible_calls(user, ToolCall.objects.filter(pk__in=call_ids))
    rows = list(calls.annotate(pending=_capped_count(_visible_waiting(user))).values_list("pk", "pending"))
    return {pk for pk, _ in rows}, rows[0][1] if rows else 0


# --- the triage list (approvals/web/triage.py says what its filters mean) ------------------------------

ROW_FIELDS = (
    "id", "kind", "tool_name", "tier", "status", "description", "edited_description", "arguments", "approved_arguments",
    "arguments_hash", "facts", "created_at", "expires_at", "warn_at", "escalated_at", "review_round",
    "required_approvals", "reviewing_until", "question",
    "run__id", "run__agent", "run__dry_run", "run__requested_by_id", "run__advanced_by",
    "review_group__id", "review_group__name", "reviewing_by__id", "reviewing_by__username",
    "revision",
)  # fmt: skip


def _amount():
    """The call's amount-like key (triage.amount_fields), as a number; NULL for tools without one."""
    whens = [
        When(tool_name__in=tools, then=Cast(KT(f"arguments__{field}"), FloatField()))
        for field, tools in triage.amount_fields().items()
    ]
    return Case(*whens, default=Value(None), output_field=FloatField()) if whens else Value(None, FloatField())


def _band(amount):
    whens = [When(**{"amount__lt": upper}, then=Value(slug)) for slug, upper, _ in triage.BANDS if upper is not None]
    return Case(*whens, When(amount__isnull=False, then=Value(triage.BANDS[-1][0])), default=Value(""))


def _decidable(user) -> Q:
    """Of the calls a user sees, those they may decide now: not of a run they requested, not approved by
    them in this round (access.can_decide's rules, as SQL)."""
    approved = Decision.objects.filter(tool_call=OuterRef("pk"), round=OuterRef("review_round"), reviewer=user)
    return Q(~Q(run__requested_by=user), ~Exists(approved))


def _mine(user) -> Q:
    """ "Mine": calls this user may decide now, or said they are reviewing."""
    return Q(reviewing_by=user, reviewing_until__gt=timezone.now()) | _decidable(user)


def _matches(user, wanted: "triage.QueueFilter") -> Q:
    q = Q()
    for field, value in (("tool_name", wanted.tool), ("tier", wanted.tier), ("run__agent", wanted.agent)):
        if value:
            q &= Q(**{field: value})
    if wanted.group:
        q &= Q(review_group__isnull=True) if wanted.group == "-" else Q(review_group__name=wanted.group)
    if wanted.band:
        q &= Q(band=wanted.band)
    if wanted.status:
        q &= Q(status=wanted.status)
    if wanted.near:
        q &= Q(warn_at__lte=timezone.now())
    if wanted.mine:
        q &= _mine(user)
    if wanted.q:
        text = wanted.q
        q &= Q(description__icontains=text) | Q(edited_description__icontains=text) | Q(tool_name__icontains=text)
    return q


def _pending_with_amount(user):
    return _visible_pending(user).annotate(amount=_amount())


def _waiting_with_amount(user):
    return _visible_waiting(user).annotate(amount=_amount())


SORT_ORDER = {
    "oldest": ("created_at", "id"),
    "deadline": (F("expires_at").asc(nulls_last=True), "created_at", "id"),
    "amount": (F("amount").desc(nulls_last=True), "created_at", "id"),
}


def queue_rows(user, wanted: "triage.QueueFilter") -> list[ToolCall]:
    """One page of the triage list (one query): the columns a row shows, its key values set on each call."""
    calls = _waiting_with_amount(user)
    if wanted.band:
        calls = calls.annotate(band=_band(F("amount")))
    start = (wanted.page - 1) * triage.PAGE_SIZE
    rows = list(
        calls.filter(_matches(user, wanted))
        .select_related("run", "review_group", "reviewing_by")
        .only(*ROW_FIELDS)
        .order_by(*SORT_ORDER[wanted.sort])[start : start + triage.PAGE_SIZE]
    )
    return with_key_values(rows)


def with_key_values(calls: list[ToolCall]) -> list[ToolCall]:
    registry.resolve(calls)  # their tools read together
    for call in calls:
        tool = registry.for_call(call)
        call.key_values = tool.key_values(call.review_arguments) if tool else []
    return calls


def queue_facets(user, wanted: "triage.QueueFilter") -> list[dict]:
    """The oldest COUNT_CAP + 1 pending calls this user may see, counted per tool, tier, agent, group and amount
    band: all of them (`total`) and those the filter keeps (`matched`); and on every row `kept`, how many
    pending calls the filter keeps in all, counted to COUNT_CAP + 1.

    One query: the window is read in the queue's index order and stops after COUNT_CAP + 1 calls, and
    `kept` stops after COUNT_CAP + 1 matches; the window's rows are grouped here, not in SQL. Calls whose
    outcome is unknown are in the window too (the status filter)."""
    calls = _waiting_with_amount(user)
    calls = calls.annotate(band=_band(F("amount"))) if wanted.band else calls
    keeps = _matches(user, wanted)
    window = calls.annotate(
        matched=Case(When(keeps, then=Value(1)), default=Value(0)) if keeps else Value(1),
        kept=_capped_count(calls.filter(keeps)),
    ).order_by("created_at", "id")
    fields = ("tool_name", "tier", "run__agent", "review_group__name", "kind", "status", "amount", "matched", "kept")
    rows = list(window.values_list(*fields)[: triage.COUNT_CAP + 1])
    counts: dict[tuple, list[int]] = {}
    for *key, amount, matched, _ in rows:
        tally = counts.setdefault((*key, triage.band_of(amount)), [0, 0])
        tally[0], tally[1] = tally[0] + 1, tally[1] + matched
    kept = rows[0][-1] if rows else 0
    names = ("tool_name", "tier", "run__agent", "review_group__name", "kind", "status", "band")
    return [
        dict(zip(names, key)) | {"total": total, "matched": hits, "kept": kept} for key, (total, hits) in counts.items()
    ]


def group_calls(user, *, tool: str, agent: str, band: str) -> list[ToolCall]:
    """The pending calls of one group of similar calls that this user may decide now, oldest first."""
    calls = _pending_with_amount(user).annotate(band=_band(F("amount")))
    calls = calls.filter(_decidable(user), tool_name=tool, run__agent=agent, band=band, kind=ToolCall.Kind.CALL)
    rows = calls.select_related("run", "review_group", "reviewing_by").only(*ROW_FIELDS)
    return with_key_values(list(rows.order_by("created_at", "id")[: triage.GROUP_LIMIT]))
