"""Exports of the audit trail, as JSON lines or CSV, streamed a chunk at a time.

Each line carries the eight hashed fields, the event's id and hash, and the
tool's name for convenience, so that anyone holding an export can recompute
every hash (see approvals.lib.hashing.event_canonical) and check the chain offline.

CSV cells are safe to open in a spreadsheet (OWASP's "CSV Injection"): every cell is
quoted, and a cell that would start like a formula gets a leading single quote. So do
cells that start with a single quote, so a reader gets the stored value back by
dropping exactly one leading quote from any cell that has one.
"""

import csv
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, time
from itertools import islice

from asgiref.sync import sync_to_async
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from approvals.audit import CHUNK_SIZE, in_chunks
from approvals.lib.hashing import canonical_json
from approvals.models import AuditEvent

FORMATS = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
COLUMNS = (
    "id",
    "created_at",
    "kind",
    "run",
    "tool_call",
    "tool",
    "actor",
    "actor_label",
    "payload",
    "prev_hash",
    "hash",
)
_FIELDS = (
    "id",
    "created_at",
    "kind",
    "run_id",
    "tool_call_id",
    "tool_call__tool_name",
    "actor_id",
    "actor_label",
    "payload",
    "prev_hash",
    "hash",
)


def parse_moment(value: str | None) -> datetime | None:
    """A date (midnight) or a date and time; naive values are in the current time zone."""
    if not value:
        return None
    value = value.strip()
    moment = parse_datetime(value)
    if moment is None:
        day = parse_date(value)
        if day is None:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD) or a date and time.")
        moment = datetime.combine(day, time.min)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


@dataclass(frozen=True)
class ExportFilter:
    """Which events to export: created at or after `since`, before `before`, of calls to `tool`."""

    since: datetime | None = None
    before: datetime | None = None
    tool: str = ""

    @classmethod
    def parse(cls, *, since: str | None = None, before: str | None = None, tool: str | None = None) -> "ExportFilter":
        """Raises ValueError with a message for a person."""
        return cls(parse_moment(since), parse_moment(before), (tool or "").strip())

    def queryset(self):
        events = AuditEvent.objects.all()
        if self.since:
            events = events.filter(created_at__gte=self.since)
        if self.before:
            events = events.filter(created_at__lt=self.before)
        if self.tool:
            events = events.filter(tool_call__tool_name=self.tool)
        return events

    def filename(self, fmt: str) -> str:
        parts = ["audit"]
        if self.since:
            parts.append("from-" + self.since.strftime("%Y%m%d"))
        if self.before:
            parts.append("before-" + self.before.strftime("%Y%m%d"))
        if self.tool:
            parts.append("".join(c if c.isalnum() or c in "-_" else "-" for c in self.tool))
        return "-".join(parts) + "." + fmt


def rows(selection: ExportFilter, chunk_size: int = CHUNK_SIZE) -> Iterator[dict]:
    for values in in_chunks(selection.queryset(), _FIELDS, chunk_size):
        row = dict(zip(COLUMNS, values))
        row["created_at"] = row["created_at"].isoformat()
        yield row


def jsonl_lines(selection: ExportFilter, chunk_size: int = CHUNK_SIZE) -> Iterator[str]:
    for row in rows(selection, chunk_size):
        yield json.dumps(row, ensure_ascii=False) + "\n"


# What makes a spreadsheet read a cell as a formula; and the quote that marks a cell as text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_MARK = "'"


def spreadsheet_text(value):
    """The cell as a spreadsheet shows text: a ' before a value that starts like a formula (or with ')."""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, TEXT_MARK)):
        return TEXT_MARK + value
    return value


class _Line:
    """csv.writer writes into this and gets the line back, so nothing accumulates."""

    def write(self, value: str) -> str:
        return value


def csv_lines(selection: ExportFilter, chunk_size: int = CHUNK_SIZE) -> Iterator[str]:
    writer = csv.writer(_Line(), quoting=csv.QUOTE_ALL)  # quotes every cell, doubles the quotes inside
    yield writer.writerow(COLUMNS)
    for row in rows(selection, chunk_size):
        row["payload"] = canonical_json(row["payload"])
        yield writer.writerow([spreadsheet_text(row[column]) for column in COLUMNS])


def lines(selection: ExportFilter, fmt: str, chunk_size: int = CHUNK_SIZE) -> Iterator[str]:
    return (csv_lines if fmt == "csv" else jsonl_lines)(selection, chunk_size)


async def in_thread(sync_lines: Iterator[str], batch: int = 500) -> AsyncIterator[str]:
    """Serve a synchronous iterator to an ASGI server without buffering it whole.

    Given a plain iterator, Django's ASGI handler would read it all into a list
    first; this pulls `batch` lines at a time in the request's sync thread, where
    the database connection lives.
    """
    take = sync_to_async(lambda: "".join(islice(sync_lines, batch)))
    while text := await take():
        yield text
