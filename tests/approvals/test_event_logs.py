"""One structured log line per event that matters, as JSON when asked, with sensitive arguments masked."""

import json
import logging

import pytest
from django.conf import settings
from pydantic import BaseModel
from pythonjsonlogger.json import JsonFormatter

from approvals import services
from approvals.models import AuditEvent, Tier
from approvals.tools import Tool, registry
from ops import logs
from tests.reviewing import REFUND_CALL, decide, propose

pytestmark = pytest.mark.django_db


class ResetArgs(BaseModel):
    account: str
    new_password: str


@pytest.fixture
def reset_tool():
    """A tool that marks its password argument as sensitive."""
    tool = Tool(
        name="reset_password",
        description="Set a customer's password.",
        args_model=ResetArgs,
        tier=Tier.APPROVAL,
        func=lambda args, context: "done",
        sensitive_fields=("new_password",),
    )
    registry.register(tool)
    support = registry.allowed("support")
    registry.allow(agent="support", tools=[*support, tool.name])  # the run fixture's agent may call it
    yield tool
    registry.allow(agent="support", tools=support)
    registry._tools.pop(tool.name)


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger="reviewhub.events")

    def read() -> list[logging.LogRecord]:
        return [record for record in caplog.records if record.name == "reviewhub.events"]

    return read


def test_a_proposal_a_decision_and_an_execution_write_one_line_each(
    run, reviewer, lines, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call = propose(run, *REFUND_CALL)
    with django_capture_on_commit_callbacks(execute=True):
        decide(call, reviewer)
    call.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        services.toolcall_execute(call=call)
    events = [(record.event, record.outcome) for record in lines()]
    assert events == [("proposed", "pending"), ("decided", "approve"), ("executed", "executed")]
    decided = lines()[1]
    assert (decided.run_id, decided.call_id, decided.tool, decided.actor) == (run.pk, call.pk, "issue_refund", "alice")
    assert decided.seconds >= 0 and lines()[2].seconds >= 0
    assert f"call_id={call.pk}" in decided.getMessage() and "actor='alice'" in decided.getMessage()


def test_nothing_is_logged_for_a_transaction_that_rolled_back(run, lines, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        propose(run, *REFUND_CALL)
    assert lines() == []


def test_sensitive_arguments_are_masked_in_the_log_and_kept_in_the_trail(
    run, reset_tool, lines, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call = propose(run, "reset_password", {"account": "dana", "new_password": "hunter2-secret"})
    (proposed,) = lines()
    assert proposed.arguments == {"account": "dana", "new_password": "***"}
    assert "hunter2" not in proposed.getMessage()
    trail = AuditEvent.objects.get(tool_call=call, kind="proposed")
    assert trail.payload["arguments"]["new_password"] == "hunter2-secret"


def test_the_json_format_puts_the_event_fields_at_the_top(run, lines, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call = propose(run, *REFUND_CALL)
    options = dict(settings.LOGGING["formatters"]["json"])
    formatter = JsonFormatter(fmt=options["fmt"], rename_fields=options["rename_fields"])
    shown = json.loads(formatter.format(lines()[0]))
    assert shown["event"] == "proposed" and shown["call_id"] == call.pk and shown["run_id"] == run.pk
    assert shown["level"] == "INFO" and shown["logger"] == "reviewhub.events"
    assert shown["arguments"] == REFUND_CALL[1]


def test_log_format_json_selects_the_json_formatter():
    assert settings.LOGGING["formatters"]["json"]["()"] == "pythonjsonlogger.json.JsonFormatter"


def test_no_line_is_built_when_info_is_off(run, caplog, monkeypatch, django_capture_on_commit_callbacks):
    caplog.set_level(logging.WARNING, logger="reviewhub.events")
    monkeypatch.setattr(logs, "fields", lambda event: pytest.fail("a line was built for nobody"))
    with django_capture_on_commit_callbacks(execute=True):
        propose(run, *REFUND_CALL)
    assert [record for record in caplog.records if record.name == "reviewhub.events"] == []
