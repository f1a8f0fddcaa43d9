"""A proposal through the agent API costs one transaction of at most 12 statements, whatever kind it is (issue 26).

Counted on PostgreSQL in real transactions, from the token's lookup to the answer, with what runs after the
commit (pushes, observers) included; BEGIN, COMMIT and savepoints are not statements. bench/README.md says what
each statement is for and why it stays. Each agent's token was used in the minute before (a token's first use
in a minute writes its last_used_at, once).
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals import audit
from approvals.models import PolicyRule, Run, ToolCall
from approvals.policy import snapshot as policy_snapshot
from ops import notify
from shop import demo_data
from tests.agentapi import PROPOSAL, AgentClient
from tests.remote.test_api_checkpoints import CHECKPOINT, REPLY_TOOL
from tests.remote.test_api_questions import LOOKUP_TOOL, QUESTION
from tests.remote.test_api_turns import TURN

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("require_postgres")]

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")
MOST = 12
SECOND = PROPOSAL | {"idempotency_key": "4711-2", "arguments": PROPOSAL["arguments"] | {"amount": 12}}


def sent(request) -> tuple[dict, list[str], int]:
    """The answer, the statements and the number of transactions of one request."""
    policy_snapshot.current()  # a process reads its snapshot of policy once (tests/approvals/test_policy_snapshot.py)
    notify.anyone_to_tell()  # whether anyone wants an email per call, once per change (tests/ops/test_notifications.py)
    with CaptureQueriesContext(connection) as queries:
        response = request()
    assert response.status_code in (200, 201), response.content
    sql = [q["sql"] for q in queries.captured_queries]
    return response.json(), [s for s in sql if not s.startswith(CONTROL)], sum(s.startswith("COMMIT") for s in sql)


@pytest.fixture
def statements_agent(db):
    agent = AgentClient("statements-bot")
    agent.declare()
    agent.declare("reply", **REPLY_TOOL)
    agent.declare("choose_order", **LOOKUP_TOOL)
    agent.get("/tools")  # the token's first use this minute
    return agent


@pytest.fixture
def governed(statements_agent, settings):
    """The demo's rules and groups, a rule on the agent's own refund tool (two reviewers), and a webhook: none
    of them may cost a statement more."""
    settings.REVIEWHUB_WEBHOOK_ALLOW_PRIVATE = True
    demo_data.seed_governance()
    PolicyRule.objects.create(
        name="Two seniors", tool_name="statements-bot.issue_refund", outcome="review", required_approvals=2
    )
    assert statements_agent.post("/webhooks", {"url": "http://127.0.0.1:9/hook"}).status_code == 201
    return statements_agent


def test_a_proposal_opening_a_thread_is_one_transaction_of_at_most_12_statements(statements_agent):
    body, statements, transactions = sent(lambda: statements_agent.post("/calls", PROPOSAL))
    assert len(statements) <= MOST and transactions == 1, statements
    assert body["status"] == "pending" and body["decision"] is None and body["tool_version"] == 1
    call = ToolCall.objects.select_related("run").get(pk=body["id"])
    assert call.run.status == Run.Status.WAITING and call.agent_facts == PROPOSAL["facts"]
    assert list(call.run.messages.values_list("seq", "role")) == [(0, "user"), (1, "assistant")]
    kinds = list(call.run.audit_events.order_by("pk").values_list("kind", flat=True))
    assert kinds == ["run_started", "proposed"] and audit.verify().ok


def test_a_proposal_in_a_thread_is_one_transaction_of_at_most_12_statements(statements_agent):
    statements_agent.propose()
    body, statements, transactions = sent(
        lambda: statements_agent.post("/calls", SECOND | {"user_request": "Refund $12."})
    )
    assert len(statements) <= MOST and transactions == 1, statements
    call = ToolCall.objects.select_related("run").get(pk=body["id"])
    roles = list(call.run.messages.values_list("seq", "role", "content"))
    assert roles[2:] == [(2, "user", "Refund $12."), (3, "assistant", PROPOSAL["reasoning"])]
    assert call.user_request == "Refund $12." and audit.verify().ok


def test_a_proposal_with_a_webhook_and_rules_costs_no_statement_more(governed):
    body, statements, transactions = sent(lambda: governed.post("/calls", PROPOSAL))
    assert len(statements) <= MOST and transactions == 1, statements
    assert ToolCall.objects.get(pk=body["id"]).required_approvals == 2
    _, statements, transactions = sent(lambda: governed.post("/calls", SECOND))
    assert len(statements) <= MOST and transactions == 1, statements


def test_the_idempotent_retry_of_a_proposal_costs_at_most_3_statements(statements_agent):
    first = statements_agent.propose()
    body, statements, _ = sent(lambda: statements_agent.post("/calls", PROPOSAL))
    assert len(statements) <= 3, statements
    assert body == first


def test_a_turn_review_is_one_transaction_of_at_most_12_statements(statements_agent):
    body, statements, transactions = sent(lambda: statements_agent.post("/turns", TURN))
    assert len(statements) <= MOST and transactions == 1, statements
    assert body["kind"] == "turn" and body["status"] == "pending"
    later = TURN | {"step": 2, "idempotency_key": "4711-turn-2", "user_request": "And A-1005?"}
    body, statements, transactions = sent(lambda: statements_agent.post("/turns", later))
    assert len(statements) <= MOST and transactions == 1, statements
    call = ToolCall.objects.get(pk=body["id"])
    assert call.message.content == "And A-1005?" and call.run.status == Run.Status.WAITING and audit.verify().ok


def test_a_checkpoint_is_one_transaction_of_at_most_12_statements(statements_agent):
    statements_agent.propose()
    body, statements, transactions = sent(lambda: statements_agent.post("/calls", CHECKPOINT))
    assert len(statements) <= MOST and transactions == 1, statements
    assert body["kind"] == "checkpoint" and body["status"] == "pending"


def test_a_question_is_one_transaction_of_at_most_12_statements(statements_agent):
    statements_agent.propose()
    question = PROPOSAL | {"tool": "choose_order", "arguments": {"email": "dana@example.com"}, "question": QUESTION}
    body, statements, transactions = sent(
        lambda: statements_agent.post("/calls", question | {"idempotency_key": "q-1"})
    )
    assert len(statements) <= MOST and transactions == 1, statements
    assert body["kind"] == "question" and body["status"] == "pending" and body["question"]["prompt"] == "Which order?"
    kinds = list(ToolCall.objects.get(pk=body["id"]).audit_events.values_list("kind", flat=True))
    assert kinds == ["proposed"] and audit.verify().ok
