"""The agent loop's cost per step: one transaction and a handful of statements, the same at step 3 and step 30."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from agents import llm, loop
from approvals import audit, services
from approvals.lib.hashing import args_hash
from approvals.models import AuditEvent, Run, Tier, ToolCall
from approvals.policy import snapshot as policy_snapshot
from approvals.tools import Tool, registry

STEPS = 30
CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


class NoteArgs(BaseModel):
    text: str


# A read-only tool whose body sends no SQL, so what is counted is the loop's own work.
ECHO = Tool(
    name="echo_note", description="Echo a note.", args_model=NoteArgs, tier=Tier.READ_ONLY, func=lambda a, c: a.text
)


class Model:
    """One echo_note call per turn until STEPS turns, then a text answer; remembers where each turn began."""

    def __init__(self):
        self.turns_at: list[int] = []

    def __call__(self, messages, tools, **kwargs):
        self.turns_at.append(len(connection.queries))
        turn = len(self.turns_at)
        if turn > STEPS:
            return llm.Reply(content="Done.", calls=[])
        call = services.ProposedCall(f"call_{turn}", "echo_note", json.dumps({"text": f"note {turn}"}))
        return llm.Reply(content="", calls=[call])


@pytest.fixture
def steps(monkeypatch):
    """The statements each step sent: the SQL between one model turn and the next, for a run of STEPS steps."""
    monkeypatch.setitem(registry._tools, ECHO.name, ECHO)
    # The read-only "orders" agent: its text answer ends the run (no checkpoint holds it for a person).
    monkeypatch.setitem(registry._allowed, "orders", (*registry.allowed("orders"), ECHO.name))
    model = Model()
    monkeypatch.setattr(llm, "complete", model)
    run = services.run_create(agent="orders", request="Take notes.")
    Run.objects.filter(pk=run.pk).update(max_steps=STEPS + 1)
    policy_snapshot.current()  # a process reads its snapshot of policy once (tests/test_policy_snapshot.py)
    with CaptureQueriesContext(connection) as queries:
        loop.advance(run.pk)
    run.refresh_from_db()
    sql = [q["sql"] for q in queries.captured_queries]
    turns = model.turns_at
    return run, [sql[a:b] for a, b in zip(turns, turns[1:])]


def statements(step: list[str]) -> list[str]:
    return [s for s in step if not s.startswith(CONTROL)]


@pytest.mark.django_db(transaction=True)
def test_a_step_that_runs_a_read_only_call_is_one_transaction_of_at_most_7_statements(steps):
    run, per_step = steps
    assert run.status == Run.Status.COMPLETED and run.step_count == STEPS + 1
    for step in per_step:
        # Policy's stamp, the run, the messages and the call stored, the chain's head locked, the trail appended
        # with its head moved (one statement on PostgreSQL: approvals/audit/store.py), the new messages read.
        assert len(statements(step)) <= (7 if connection.vendor == "postgresql" else 8), statements(step)
        assert sum(s.startswith("COMMIT") for s in step) == 1, step


@pytest.mark.django_db(transaction=True)
def test_the_statements_of_a_step_do_not_grow_with_the_history(steps):
    _, per_step = steps
    assert len(per_step) == STEPS
    assert len(statements(per_step[2])) == len(statements(per_step[-1]))
    assert len("".join(per_step[2])) > 0.8 * len("".join(per_step[-1]))  # no list of ids that grows


@pytest.mark.django_db(transaction=True)
def test_a_step_run_in_one_transaction_keeps_every_event_in_the_trail(steps):
    run, _ = steps
    calls = ToolCall.objects.filter(run=run)
    assert calls.count() == STEPS and set(calls.values_list("status", flat=True)) == {ToolCall.Status.EXECUTED}
    kinds = list(AuditEvent.objects.filter(tool_call=calls.last()).order_by("pk").values_list("kind", flat=True))
    assert kinds == ["auto_run", "executed"]  # run before its step was stored: one event for its run
    executed = AuditEvent.objects.get(tool_call=calls.last(), kind="executed").payload
    assert executed["arguments_hash"] == args_hash(executed["arguments"]) and executed["output"]
    assert AuditEvent.objects.filter(run=run, kind="completed").count() == 1
    assert run.messages.filter(role="tool").count() == STEPS and audit.verify().ok
