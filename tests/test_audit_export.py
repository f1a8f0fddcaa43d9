"""Exports of the trail: exactly the chosen events, streamed, checkable without ReviewHub."""

import asyncio
import csv
import hashlib
import io
import json
from datetime import UTC, datetime
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals import audit
from approvals.audit import export
from approvals.models import AuditEvent, Message, Run, ToolCall

pytestmark = pytest.mark.django_db

EXPORT = "admin:approvals_auditevent_export"


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


@pytest.fixture
def events(db):
    """Twelve events on 10-13 November 2026: run-level ones and ones of refund and email calls."""
    run = Run.objects.create(agent="support", request="Help Dana.")
    message = Message.objects.create(run=run, seq=0, role="assistant")
    refund = ToolCall.objects.create(run=run, message=message, call_id="a", tool_name="issue_refund", status="executed")
    email = ToolCall.objects.create(run=run, message=message, call_id="b", tool_name="send_email", status="rejected")
    plan = [
        (10, "run_started", None), (10, "proposed", refund), (10, "proposed", email),
        (11, "decided", refund), (11, "executing", refund), (11, "executed", refund),
        (12, "decided", email), (12, "resumed", None), (12, "proposed", refund),
        (13, "expired", refund), (13, "resumed", None), (13, "completed", None),
    ]  # fmt: skip
    made = []
    for i, (day, kind, call) in enumerate(plan):
        with mock.patch("approvals.audit.timezone.now", return_value=at(day, 8 + i)):
            made.append(
                audit.record(kind, run=run, tool_call=call, payload={"n": i, "note": "Dana’s refund, “quoted”, a,b"})
            )
    return made


def read_jsonl(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_the_jsonl_export_holds_exactly_the_events_of_the_chosen_dates_and_tool(admin_client, events):
    url = reverse(EXPORT, args=["jsonl"])
    response = admin_client.get(
        url, {"created_at__gte": "2026-11-11", "created_at__lt": "2026-11-13", "tool": "issue_refund"}
    )
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert 'filename="audit-from-20261111-before-20261113-issue_refund.jsonl"' in response["Content-Disposition"]
    lines = read_jsonl(response)
    expected = [
        e for e in events if e.tool_call and e.tool_call.tool_name == "issue_refund" and 11 <= e.created_at.day < 13
    ]
    assert [line["id"] for line in lines] == [e.pk for e in expected] and len(lines) == 4
    assert {line["tool"] for line in lines} == {"issue_refund"}
    assert len(read_jsonl(admin_client.get(url))) == 12
    assert [line["kind"] for line in read_jsonl(admin_client.get(url, {"created_at__gte": "2026-11-13"}))] == [
        "expired",
        "resumed",
        "completed",
    ]


def test_the_csv_export_holds_the_same_events(admin_client, events):
    url = reverse(EXPORT, args=["csv"])
    response = admin_client.get(url, {"created_at__lt": "2026-11-12", "tool": "send_email"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [int(r["id"]) for r in rows] == [events[2].pk]
    assert json.loads(rows[0]["payload"]) == events[2].payload and rows[0]["hash"] == events[2].hash


def test_an_exported_line_can_be_checked_without_reviewhub(admin_client, events):
    lines = read_jsonl(admin_client.get(reverse(EXPORT, args=["jsonl"])))
    previous = "0" * 64
    for line in lines:
        hashed = {
            key: line[key]
            for key in ("run", "tool_call", "kind", "actor", "actor_label", "payload", "created_at", "prev_hash")
        }
        canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert hashlib.sha256(canonical.encode()).hexdigest() == line["hash"]
        assert line["prev_hash"] == previous
        previous = line["hash"]


def test_the_export_streams_a_chunk_at_a_time(events):
    lines = export.lines(export.ExportFilter(), "jsonl", chunk_size=5)
    with CaptureQueriesContext(connection) as queries:
        first = next(lines)
        assert len(queries) == 1 and "LIMIT 5" in queries[0]["sql"]
        assert json.loads(first)["id"] == events[0].pk
        rest = list(lines)
    assert len(rest) == 11 and len(queries) == 3  # 5 + 5 + 2 events


def test_under_asgi_the_export_is_read_in_batches_not_all_at_once():
    pulled = []

    def lines():
        for i in range(10):
            pulled.append(i)
            yield f"{i}\n"

    async def first_batch():
        stream = export.in_thread(lines(), batch=3)
        return await anext(stream)

    assert asyncio.run(first_batch()) == "0\n1\n2\n"
    assert pulled == [0, 1, 2]


def test_export_audit_command_writes_the_filtered_events(events, tmp_path):
    out = tmp_path / "trail.jsonl"
    call_command("export_audit", "--since", "2026-11-12", "--before", "2026-11-13", "--output", str(out))
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [e.pk for e in events[6:9]]
    stdout = io.StringIO()
    call_command("export_audit", "--format", "csv", "--tool", "send_email", stdout=stdout)
    assert [int(r["id"]) for r in csv.DictReader(io.StringIO(stdout.getvalue()))] == [events[2].pk, events[6].pk]


def test_a_bad_date_is_refused_with_a_reason(admin_client, events):
    response = admin_client.get(reverse(EXPORT, args=["jsonl"]), {"created_at__gte": "last tuesday"})
    assert response.status_code == 400 and b"is not a date" in response.content


def test_the_audit_list_links_to_exports_of_its_dates_and_tool(client, auditor, events):
    client.force_login(auditor)
    page = client.get(
        reverse("admin:approvals_auditevent_changelist"), {"tool": "send_email", "kind": "proposed"}
    ).content.decode()
    assert reverse(EXPORT, args=["jsonl"]) + "?tool=send_email" in page
    assert "of calls to send_email" in page
    assert AuditEvent.objects.count() == 12


def test_over_asgi_the_admin_hands_django_an_async_iterator(admin_user, events):
    from django.contrib import admin
    from django.test import AsyncRequestFactory

    request = AsyncRequestFactory().get(reverse(EXPORT, args=["jsonl"]))
    request.user = admin_user
    response = admin.site._registry[AuditEvent].export_view(request, "jsonl")
    assert response.is_async  # a sync iterator would be read whole before the first byte is sent
