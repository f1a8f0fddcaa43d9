"""The auditors' export of practice calls: one CSV row per call, its mistake, who decided it, how, how fast."""

import csv
import io

from approvals.audit.export import spreadsheet_text

from .models import PracticeCall

COLUMNS = (
    "planted_at",
    "tool",
    "call",
    "copied_from_call",
    "mistake",
    "explanation",
    "group",
    "reviewer",
    "outcome",
    "decided_at",
    "seconds_to_decide",
)


def _row(practice: PracticeCall) -> list:
    return [
        practice.planted_at.isoformat(),
        practice.tool_name,
        practice.tool_call_id or "",
        practice.source_id,
        practice.mistake,
        practice.explanation,
        practice.group.name if practice.group else "",
        practice.reviewer.get_username() if practice.reviewer else "",
        practice.settled_outcome,
        practice.decided_at.isoformat() if practice.decided_at else "",
        "" if practice.seconds_to_decide is None else practice.seconds_to_decide,
    ]


def csv_text(practice_calls) -> str:
    """Every cell quoted, and a cell that would start like a formula marked as text (approvals/audit/export.py)."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(COLUMNS)
    for practice in practice_calls:
        writer.writerow([spreadsheet_text(value) for value in _row(practice)])
    return out.getvalue()
