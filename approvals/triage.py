"""The reviewer's queue as a triage list: what its filters, sort, page and similar-call groups mean.

A filter is read from the query string into a QueueFilter (unknown values fall back to "all", never an
error); approvals/selectors.py turns it into one query for the page of rows and one for the counts and
groups, so the page costs the same number of queries at 10 or 10,000 pending calls.
"""

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from django.http import QueryDict

from .models import Tier
from .tools import registry
from .turns import TURN_TOOL

PAGE_SIZE = 50
SORTS = {"oldest": "Oldest first", "deadline": "Deadline first", "amount": "Largest amount first"}
# Amount-like key fields fall in these bands when similar calls are grouped: (slug, upper bound, label).
BANDS = [("under-50", 50, "under $50"), ("50-500", 500, "$50 to $500"), ("over-500", None, "over $500")]
BAND_LABELS = {slug: label for slug, _, label in BANDS}
GROUP_LIMIT = 100  # calls in one batch decision


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

    @property
    def narrowed(self) -> bool:
        """Whether the list shows less than every pending call (a new call may not belong in it)."""
        return bool(self.tool or self.tier or self.group or self.agent or self.mine or self.near or self.q or self.band)

    def query(self, **changes) -> str:
        """This filter as a query string, with changes (a new sort or page)."""
        values = replace(self, **changes)
        pairs = {name: getattr(values, name) for name in ("tool", "tier", "group", "agent", "q", "band")}
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
    return QueueFilter(
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
        properties = tool.args_model.model_json_schema().get("properties", {})
        for name in tool.key_fields:
            if _is_number(properties.get(name, {})):
                fields.setdefault(name, []).append(tool.name)
                break  # one amount per tool: its first numeric key field
    return fields


def _is_number(schema: dict) -> bool:
    kinds = [schema.get("type")] + [option.get("type") for option in schema.get("anyOf", [])]
    return any(kind in ("number", "integer") for kind in kinds)


def group_title(*, count: int, tool: str, agent: str, band: str) -> str:
    """ "14 issue_refund calls under $50 from the support agent"."""
    what = f"{count} {tool} call{'s' if count != 1 else ''}"
    amount = f" {BAND_LABELS[band]}" if band in BAND_LABELS else ""
    return f"{what}{amount} from the {agent} agent"


def summarize(facets: list[dict], wanted: QueueFilter) -> dict:
    """From queue_facets' counts: the totals, the choices of each filter, the similar-call groups, the pages."""
    total = sum(row["total"] for row in facets)
    matched = sum(row["matched"] for row in facets)
    similar: dict[tuple, int] = {}
    for row in facets:
        if row["matched"] and row["tool_name"] != TURN_TOOL and row.get("kind", "call") == "call":  # one by one
            key = (row["tool_name"], row["run__agent"], row["band"])
            similar[key] = similar.get(key, 0) + row["matched"]
    groups = [
        {"tool": tool, "agent": agent, "band": band, "count": count,
         "title": group_title(count=count, tool=tool, agent=agent, band=band)}
        for (tool, agent, band), count in sorted(similar.items(), key=lambda item: (-item[1], item[0]))
        if count > 1
    ]  # fmt: skip
    pages = max(1, -(-matched // PAGE_SIZE))
    return {
        "total": total,
        "matched": matched,
        "tools": sorted({row["tool_name"] for row in facets} | ({wanted.tool} if wanted.tool else set())),
        "tiers": [(value, label) for value, label in Tier.choices if any(r["tier"] == value for r in facets)],
        "agents": sorted({row["run__agent"] for row in facets} | ({wanted.agent} if wanted.agent else set())),
        "groups": sorted(
            {row["review_group__name"] for row in facets if row["review_group__name"]}
            | ({wanted.group} if wanted.group not in ("", "-") else set())
        ),
        "similar": groups[:8],
        "page": min(wanted.page, pages),
        "pages": pages,
        "previous": wanted.query(page=wanted.page - 1) if wanted.page > 1 else None,
        "next": wanted.query(page=wanted.page + 1) if wanted.page < pages else None,
        # A new call joins this list in place only when the list is every pending call, oldest first, to the end.
        "live_insert": not wanted.narrowed and wanted.sort == "oldest" and wanted.page >= pages,
    }
