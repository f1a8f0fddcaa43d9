"""The reviewer's queue as a triage list: what its filters, sort, page and similar-call groups mean.

A filter is read from the query string into a QueueFilter (unknown values fall back to "all", never an
error); approvals/selectors.py turns it into one query for the page of rows and one for the counts and
groups, so the page costs the same number of queries at 10 or 10,000 pending calls. Counts stop at
COUNT_CAP + 1 ("1,000+"), and the filters' choices and the similar-call groups come from the oldest
COUNT_CAP + 1 pending calls, so the counting query reads no more than that, however many wait.
"""

import functools
from dataclasses import dataclass, replace
from urllib.parse import quote, urlencode

from django.http import QueryDict

from approvals.models import Tier
from approvals.policy.turn_rules import TURN_TOOL
from approvals.tools import registry

PAGE_SIZE = 50
COUNT_CAP = 1000  # pending calls are counted exactly up to here; more read as "1,000+"
SORTS = {"oldest": "Oldest first", "deadline": "Deadline first", "amount": "Largest amount first"}
# Amount-like key fields fall in these bands when similar calls are grouped: (slug, upper bound, label).
BANDS = [("under-50", 50, "under $50"), ("50-500", 500, "$50 to $500"), ("over-500", None, "over $500")]
BAND_LABELS = {slug: label for slug, _, label in BANDS}
GROUP_LIMIT = 100  # calls in one batch decision
# Calls waiting for a person: for review, or to say what happened (a lapsed claim, services/outcomes.py).
STATUSES = {"pending": "Waiting for review", "outcome_unknown": "Outcome unknown"}


@dataclass(frozen=True)
class QueueFilter:
    tool: str = ""
    tier: str = ""
    group: str = ""
    agent: str = ""
    mine: bool = False
    near: bool = False
    q: str = ""
    sort: str = "oldest"
    page: int = 1
    band: str = ""
    status: str = ""  # "" every call waiting for a person; "pending" for review; "outcome_unknown" to be settled

    @property
    def narrowed(self) -> bool:
        """Whether the list shows less than every pending call (a new call may not belong in it)."""
        return bool(
            self.tool or self.tier or self.group or self.agent or self.mine or self.near or self.q or self.band
        ) or bool(self.status)

    def query(self, **changes) -> str:
        """This filter as a query string, with changes (a new sort or page)."""
        values = replace(self, **changes)
        pairs = {name: getattr(values, name) for name in ("tool", "tier", "group", "agent", "q", "band", "status")}
        pairs |= {"mine": "1" if values.mine else "", "near": "1" if values.near else ""}
        pairs |= {
            "sort": values.sort if values.sort != "oldest" else "",
            "page": values.page if values.page > 1 else "",
        }
        return urlencode({name: value for name, value in pairs.items() if value})


def _number(value: str, default: int) -> int:
    return int(value) if value.isdigit() and 0 < len(value) < 7 else default


def queue_filter(params: QueryDict) -> QueueFilter:
    """The filter a query string asks for; what it cannot mean is ignored."""

    def text(name: str, limit: int = 200) -> str:
        return "".join(ch for ch in params.get(name, "") if ch.isprintable()).strip()[:limit]

    tier = text("tier")
    sort = text("sort")
    band = text("band")
    status = text("status")
    return QueueFilter(
        status=status if status in STATUSES else "",
        tool=text("tool"),
        tier=tier if tier in Tier.values else "",
        group=text("group"),
        agent=text("agent"),
        mine=params.get("mine") == "1",
        near=params.get("near") == "1",
        q=text("q"),
        sort=sort if sort in SORTS else "oldest",
        page=_number(params.get("page", ""), 1),
        band=band if band in BAND_LABELS else "",
    )


def amount_fields() -> dict[str, list[str]]:
    """Amount-like key fields (numbers in the tool's schema) of each registered tool: {field: [tool names]}."""
    fields: dict[str, list[str]] = {}
    for tool in registry.all():
        name = amount_field(tool)
        if name:
            fields.setdefault(name, []).append(tool.name)
    return fields


def amount_field(tool) -> str:
    """A tool's first numeric key field (its amount, as the triage list and the learned rules read it), or ""."""
    return _amount_field(tool.args_model, tuple(tool.key_fields))


@functools.lru_cache(maxsize=512)
def _amount_field(args_model, key_fields: tuple[str, ...]) -> str:
    """A tool's first numeric key field. Cached: pydantic builds a schema in about a millisecond, and every
    queue page and push asks for every tool's."""
    properties = args_model.model_json_schema().get("properties", {})
    return next((name for name in key_fields if _is_number(properties.get(name, {}))), "")


def _is_number(schema: dict) -> bool:
    kinds = [schema.get("type")] + [option.get("type") for option in schema.get("anyOf", [])]
    return any(kind in ("number", "integer") for kind in kinds)


def band_of(amount: float | None) -> str:
    """The amount band of a call's amount-like key, as selectors._band says it in SQL."""
    if amount is None:
        return ""
    return next((slug for slug, upper, _ in BANDS if upper is not None and amount < upper), BANDS[-1][0])


def count_label(count: int) -> str:
    """A count of pending calls as shown: "12", or "1,000+" past COUNT_CAP."""
    return f"{COUNT_CAP:,}+" if count > COUNT_CAP else str(count)


def group_title(*, count: int, tool: str, agent: str, band: str, more: bool = False) -> str:
    """ "14 issue_refund calls under $50 from the support agent"; "14+ ..." when there may be more."""
    what = f"{count}{'+' if more else ''} {tool} call{'s' if count != 1 or more else ''}"
    amount = f" {BAND_LABELS[band]}" if band in BAND_LABELS else ""
    return f"{what}{amount} from the {agent} agent"


def similar_groups(facets: list[dict], *, more: bool) -> list[dict]:
    """The similar-call groups of queue_facets' counts, largest first: pending calls (not model turns, questions or
    checkpoints, decided one by one) of one tool, agent and amount band, two or more of them."""
    similar: dict[tuple, int] = {}
    for row in facets:
        batchable = row.get("kind", "call") == "call" and row.get("status", "pending") == "pending"  # else one by one
        if row["matched"] and row["tool_name"] != TURN_TOOL and batchable:
            key = (row["tool_name"], row["run__agent"], row["band"])
            similar[key] = similar.get(key, 0) + row["matched"]
    return [
        {"tool": tool, "agent": agent, "band": band, "count": count,
         "title": group_title(count=count, tool=tool, agent=agent, band=band, more=more),
         "query": f"tool={quote(tool, safe='/')}&agent={quote(agent, safe='/')}&band={band}"}
        for (tool, agent, band), count in sorted(similar.items(), key=lambda item: (-item[1], item[0]))
        if count > 1
    ]  # fmt: skip


def summarize(facets: list[dict], wanted: QueueFilter, *, full_page: bool = False) -> dict:
    """From queue_facets' counts: the totals, the choices of each filter, the similar-call groups, the pages.

    Past COUNT_CAP the counts read "1,000+", the groups count among the oldest calls ("14+"), and the list
    goes on to a next page while this one is full (`full_page`: it shows PAGE_SIZE rows)."""
    total = sum(row["total"] for row in facets)  # at most COUNT_CAP + 1: the oldest pending calls
    matched = facets[0]["kept"] if facets else 0
    more = matched > COUNT_CAP
    pages = max(1, -(-min(matched, COUNT_CAP) // PAGE_SIZE), wanted.page if more else 1)
    has_next = full_page if more else wanted.page < pages
    shown = f"of {count_label(total)} pending match" if wanted.narrowed else "pending"
    if pages > 1:
        shown += f" · page {min(wanted.page, pages)} of {pages}{'+' if more else ''}"
    return {
        "total": total,
        "matched": matched,
        "more": more,  # more pending calls match than were counted: "page 3 of 20+"
        "shown": shown,  # after the count of matching calls: "pending · page 1 of 3", "of 40 pending match"
        "tools": sorted({row["tool_name"] for row in facets} | ({wanted.tool} if wanted.tool else set())),
        "tiers": [(value, label) for value, label in Tier.choices if any(r["tier"] == value for r in facets)],
        "statuses": [
            (value, label)
            for value, label in STATUSES.items()
            if value == wanted.status or any(r.get("status") == value for r in facets)
        ],
        "agents": sorted({row["run__agent"] for row in facets} | ({wanted.agent} if wanted.agent else set())),
        "groups": sorted(
            {row["review_group__name"] for row in facets if row["review_group__name"]}
            | ({wanted.group} if wanted.group not in ("", "-") else set())
        ),
        "similar": similar_groups(facets, more=total > COUNT_CAP)[:8],
        "page": min(wanted.page, pages),
        "pages": pages,
        "previous": wanted.query(page=wanted.page - 1) if wanted.page > 1 else None,
        "next": wanted.query(page=wanted.page + 1) if has_next else None,
        # A new call joins this list in place only when the list is every pending call, oldest first, to the end.
        "live_insert": not wanted.narrowed and wanted.sort == "oldest" and not has_next and wanted.page >= pages,
    }
