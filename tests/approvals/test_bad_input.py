"""Bad input from a person or a URL gets a clear, field-level answer and changes nothing: no 500s.

Several of these only showed on PostgreSQL (it refuses NUL characters in text and JSON).
"""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals.models import AuditEvent, Decision, ToolCall
from shop.models import Refund
from tests.badinput import REFUND
from tests.reviewing import post

pytestmark = pytest.mark.django_db


def assert_nothing_stored(call):
    call.refresh_from_db()
    assert call.status == ToolCall.Status.PENDING
    assert call.approved_arguments is None
    assert not Decision.objects.filter(tool_call=call).exists()
    assert not AuditEvent.objects.filter(tool_call=call, kind="decided").exists()
    assert not Refund.objects.exists()


def errors_of(response) -> dict:
    return response.context["errors"]


# --- edits (item 6) --------------------------------------------------------------------------


def test_an_edit_nested_too_deeply_is_refused_with_a_field_error(client, held_refund):
    response = post(client, held_refund, "edit", arguments_json="[" * 100_000)
    assert response.status_code == 400
    assert "nested too deeply" in " ".join(errors_of(response)["arguments_json"])
    assert_nothing_stored(held_refund)


def test_an_edit_with_a_number_of_5000_digits_is_refused_on_that_field(client, held_refund):
    response = post(client, held_refund, "edit", arguments_json='{"amount": ' + "9" * 5000 + "}")
    assert response.status_code == 400
    assert "5000 digits" in " ".join(errors_of(response)["amount"])
    assert_nothing_stored(held_refund)


def test_an_edit_with_infinity_or_nan_is_refused_on_that_field(client, held_refund):
    for number in ("1e999", "NaN", "-Infinity"):
        response = post(client, held_refund, "edit", arguments_json=f'{{"order_id": "A-1001", "amount": {number}}}')
        assert response.status_code == 400
        assert "finite number" in " ".join(errors_of(response)["amount"])
    response = post(client, held_refund, "edit", arg_order_id="A-1001", arg_amount="nan", arg_reason="damaged")
    assert response.status_code == 400
    assert errors_of(response)["amount"]
    assert_nothing_stored(held_refund)


@pytest.mark.parametrize("field", ["order_id", "reason"])
def test_a_nul_character_in_an_edited_field_is_refused_on_that_field(client, held_refund, field):
    data = {f"arg_{name}": str(value) for name, value in REFUND.items()}
    data[f"arg_{field}"] = "A-1001\x00" if field == "order_id" else "dam\x00aged"
    response = post(client, held_refund, "edit", **data)
    assert response.status_code == 400
    assert "NUL character" in " ".join(errors_of(response)[field])
    assert_nothing_stored(held_refund)


def test_a_nul_character_or_a_lone_surrogate_in_json_is_refused_on_that_field(client, held_refund):
    for bad in ("dam\x00aged", "dam\ud800aged"):
        arguments = json.dumps({**REFUND, "reason": bad})  # ASCII: the NUL and the surrogate travel as \u escapes
        response = post(client, held_refund, "edit", arguments_json=arguments)
        assert response.status_code == 400
        assert "cannot be stored" in " ".join(errors_of(response)["reason"])
    response = post(client, held_refund, "edit", arguments_json=json.dumps({**REFUND, "re\x00ason": "x"}))
    assert response.status_code == 400
    assert_nothing_stored(held_refund)


def test_showing_the_changes_of_a_bad_edit_answers_with_the_same_field_error(client, held_refund):
    response = post(client, held_refund, "preview_edit", arguments_json='{"amount": ' + "9" * 5000 + "}")
    assert response.status_code == 400
    assert "5000 digits" in " ".join(errors_of(response)["amount"])
    assert_nothing_stored(held_refund)


# --- the tool's own check runs on an edit too (item 13, part) ---------------------------------


def test_an_edit_the_tools_own_check_refuses_is_not_approved(client, held_refund):
    response = post(client, held_refund, "edit", arg_order_id="A-9999", arg_amount="10", arg_reason="Damaged")
    assert response.status_code == 400
    assert errors_of(response)["__all__"] == ["issue_refund cannot run with these arguments: there is no order A-9999."]
    assert "there is no order A-9999." in response.content.decode()
    assert_nothing_stored(held_refund)


def test_showing_the_changes_runs_the_tools_own_check_too(client, held_refund):
    response = post(client, held_refund, "preview_edit", arg_order_id="A-9999", arg_amount="10", arg_reason="Damaged")
    assert response.status_code == 400
    assert "there is no order A-9999." in response.content.decode()


# --- reject and respond (item 7) ----------------------------------------------------------------


def test_a_reject_reason_with_a_nul_character_is_refused_with_a_field_error(client, held_refund):
    response = post(client, held_refund, "reject", reason="a\x00b")
    assert response.status_code == 400
    assert "NUL character" in " ".join(errors_of(response)["reason"])
    assert "NUL character" in response.content.decode()
    assert_nothing_stored(held_refund)


def test_respond_guidance_with_a_nul_character_is_refused_with_a_field_error(client, held_refund):
    response = post(client, held_refund, "respond", reason="no", guidance="do\x00this")
    assert response.status_code == 400
    assert "NUL character" in " ".join(errors_of(response)["guidance"])
    assert_nothing_stored(held_refund)


# --- undo (item 8) ------------------------------------------------------------------------------


def test_undo_with_a_bad_call_id_is_not_found_and_the_old_form_route_is_gone(client, held_refund):
    run_id = held_refund.run_id
    for call_part in ("abc", "", "1.5", "-1", "99999999999999999999999", "٣"):
        response = client.post(f"/runs/{run_id}/calls/{call_part}/undo/")
        assert response.status_code == 404, call_part
    assert client.post(reverse("approvals:call_undo", args=[run_id, 2**63])).status_code == 404
    assert client.post(reverse("approvals:call_undo", args=[run_id + 1, held_refund.pk])).status_code == 404
    for data in ({"call": "abc"}, {"call": ""}, {"call": "1.5"}, {"action": "undo", "call": str(held_refund.pk)}):
        assert client.post(f"/runs/{run_id}/action/", data).status_code == 404
        assert client.post(f"/runs/{run_id}/undo/", data).status_code == 404


# --- admin filters and the export (item 9) ------------------------------------------------------


def record_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if "approvals_" in q["sql"]]


@pytest.mark.parametrize(
    "model, param",
    [
        ("toolcall", "tool"),
        ("toolcall", "status"),
        ("toolcall", "tier"),
        ("toolcall", "q"),
        ("auditevent", "kind"),
        ("auditevent", "tool"),
        ("decision", "tool"),
        ("run", "status"),
        ("message", "role"),
        ("policyrule", "tool_name"),
    ],
)
def test_a_nul_character_in_an_admin_filter_is_refused_before_any_query(auditor_client, model, param):
    url = reverse(f"admin:approvals_{model}_changelist")
    with CaptureQueriesContext(connection) as queries:
        response = auditor_client.get(url, {param: "issue\x00refund"})
    assert response.status_code == 400
    assert "NUL character" in response.content.decode()
    assert record_queries(queries) == []


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_nul_character_in_the_exports_tool_filter_is_refused_before_streaming(auditor_client, fmt):
    url = reverse("admin:approvals_auditevent_export", args=[fmt])
    with CaptureQueriesContext(connection) as queries:
        response = auditor_client.get(url, {"tool": "issue\x00refund"})
    assert response.status_code == 400
    assert not response.streaming
    assert record_queries(queries) == []


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, "99999999999999999999999"])
def test_odd_numbers_in_the_reviewer_filter_and_the_search_are_answered_cleanly(auditor_client, value):
    for model, params in [
        ("toolcall", {"reviewer": value}),
        ("toolcall", {"q": value}),
        ("run", {"q": value}),
        ("decision", {"reviewer": value, "q": value}),
        ("auditevent", {"actor": value, "q": value}),
    ]:
        response = auditor_client.get(reverse(f"admin:approvals_{model}_changelist"), params)
        assert response.status_code == 200, (model, params)
