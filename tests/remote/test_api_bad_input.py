"""The web pages' bad-input rules hold for the agent API: a 4xx naming the problem, nothing stored, never a 500."""

import json

import pytest

from approvals.models import Run, ToolCall
from remote.models import DeclaredTool
from tests.agentapi import PROPOSAL, REFUND_TOOL


def nested(depth: int):
    value = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def refused(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"detail", "errors"} and body["detail"]
    return body


def nothing_stored():
    return not ToolCall.objects.exists() and not Run.objects.exists()


def test_an_oversized_body_is_refused_with_413(refund_agent, settings):
    settings.REVIEWHUB_API_MAX_BODY_BYTES = 10_000
    body = PROPOSAL | {"reasoning": "x" * 20_000}
    refused(refund_agent.post("/calls", body), 413)
    assert nothing_stored()


def test_a_body_over_djangos_own_limit_is_413_too(refund_agent, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5_000
    refused(refund_agent.post("/calls", PROPOSAL | {"reasoning": "x" * 10_000}), 413)


def test_malformed_json_is_400(refund_agent):
    refused(refund_agent.post("/calls", '{"thread_id": '), 400)
    assert nothing_stored()


@pytest.mark.parametrize(
    "field, value",
    [("reasoning", "a\x00b"), ("thread_id", "t\x00"), ("arguments", {"order_id": "A\x00", "amount": 5})],
)
def test_a_nul_character_anywhere_is_refused_naming_the_field(refund_agent, field, value):
    body = refused(refund_agent.post("/calls", PROPOSAL | {field: value}), 422)
    assert any(name.startswith(field) for name in body["errors"]), body
    assert nothing_stored()


def test_a_lone_surrogate_is_refused(refund_agent):
    text = json.dumps(PROPOSAL | {"reasoning": "x"}).replace('"x"', '"\\ud800"')
    body = refused(refund_agent.post("/calls", text), 422)
    assert "reasoning" in body["errors"]


def test_deep_nesting_is_refused(refund_agent):
    refused(refund_agent.post("/calls", PROPOSAL | {"facts": nested(40)}), 422)
    refused(refund_agent.post("/calls", "[" * 5000 + "]" * 5000), 422)
    assert nothing_stored()


def test_an_unknown_field_is_refused_by_name(refund_agent):
    body = refused(refund_agent.post("/calls", PROPOSAL | {"priority": "high"}), 422)
    assert body["errors"] == {"priority": ["Unknown field."]}
    assert nothing_stored()


@pytest.mark.parametrize(
    "field, value",
    [("thread_id", 17), ("arguments", "order A-1001"), ("facts", [1]), ("idempotency_key", None), ("tool", "a b")],
)
def test_a_wrong_type_is_refused_by_name(refund_agent, field, value):
    body = refused(refund_agent.post("/calls", PROPOSAL | {field: value}), 422)
    assert field in body["errors"]
    assert nothing_stored()


def test_a_missing_field_is_named(refund_agent):
    body = {key: value for key, value in PROPOSAL.items() if key != "idempotency_key"}
    assert refused(refund_agent.post("/calls", body), 422)["errors"] == {"idempotency_key": ["This field is required."]}


def test_numbers_python_cannot_read_are_refused(refund_agent):
    text = json.dumps(PROPOSAL).replace('"amount": 490', '"amount": ' + "9" * 5000)
    assert "arguments.amount" in refused(refund_agent.post("/calls", text), 422)["errors"]
    text = json.dumps(PROPOSAL).replace('"amount": 490', '"amount": NaN')
    assert "arguments.amount" in refused(refund_agent.post("/calls", text), 422)["errors"]


def test_an_id_out_of_range_is_a_field_error(refund_agent):
    assert "call_id" in refused(refund_agent.get("/calls/99999999999999999999999"), 422)["errors"]
    assert "wait" in refused(refund_agent.get("/calls/1?wait=61"), 422)["errors"]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"input_schema": {"type": "string"}}, "input_schema"),
        ({"input_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "input_schema"),
        ({"description_template": "{amount.__class__}"}, "description_template"),
        ({"description_template": "{amount:>99999999}"}, "description_template"),
        ({"key_fields": ["coupon"]}, "key_fields"),
        ({"decisions": []}, "decisions"),
        ({"decisions": ["launch"]}, "decisions.0"),
        ({"tier": "sometimes"}, "tier"),
    ],
)
def test_a_bad_tool_declaration_is_refused_by_field(agent, change, field):
    body = refused(agent.put("/tools/issue_refund", REFUND_TOOL | change), 422)
    assert field in body["errors"], body
    assert not DeclaredTool.objects.exists()


def test_a_bad_tool_name_is_refused(agent):
    assert "name" in refused(agent.put("/tools/bad%20name", REFUND_TOOL), 422)["errors"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_database_refuses_is_a_503_to_retry_not_a_500(require_postgres, refund_agent, monkeypatch):
    import psycopg
    from django.db import connection

    def too_many(*args, **kwargs):
        raise psycopg.OperationalError("connection failed: FATAL:  sorry, too many clients already")

    connection.close()
    monkeypatch.setattr(connection, "get_new_connection", too_many)
    response = refund_agent.post("/calls", PROPOSAL)
    monkeypatch.undo()

    assert "try again" in refused(response, 503)["detail"] and response["Retry-After"] == "1"
    assert refund_agent.post("/calls", PROPOSAL).status_code == 201  # the retry, once it may connect
