"""The admin's search and its call columns come from what each tool declares, not from approvals/."""

from dataclasses import replace

import pytest
from django.db import connection, transaction
from django.urls import reverse

from approvals.admin import search
from approvals.models import ToolCall
from approvals.tools import Searchable
from approvals.tools import registry as tools

from .reviewing import propose

pytestmark = pytest.mark.django_db


@pytest.fixture
def ticket_tool(monkeypatch):
    """A tool of another app: a lookup whose calls are found by a ticket number (T-42, any case)."""
    monkeypatch.setattr(tools, "_tools", dict(tools._tools))
    monkeypatch.setattr(tools, "_allowed", dict(tools._allowed))
    ticket = Searchable("query", pattern=r"[Tt]-[0-9]+", forms=("upper",), label="a ticket number (T-42)")
    tool = replace(tools.get("lookup_customer"), name="find_ticket", search_fields=(ticket,), key_fields=("query",))
    tools.register(tool)
    tools.allow(agent="support", tools=(*tools.allowed("support"), tool.name))
    return tool


def test_a_search_field_a_tool_declares_finds_its_calls(run, ticket_tool):
    call = propose(run, "find_ticket", {"query": "T-42"})
    assert list(ToolCall.objects.filter(search.calls("t-42")).values_list("pk", flat=True)) == [call.pk]
    assert not ToolCall.objects.filter(search.calls("t-43")).exists()


def test_without_a_declaration_nothing_is_searched_by_that_argument(run):
    propose(run, "lookup_customer", {"query": "T-42"})  # lookup_customer declares no search field
    assert ToolCall.objects.filter(arguments__query="T-42").exists()
    assert not ToolCall.objects.filter(search.calls("T-42")).exists()


def test_the_search_boxes_say_what_the_tools_declare(client, auditor, ticket_tool):
    client.force_login(auditor)
    page = client.get(reverse("admin:approvals_toolcall_changelist")).content.decode()
    assert "an order number (A-1001)" in page and "a ticket number (T-42)" in page


def test_the_call_list_shows_each_tools_key_fields_and_facts(client, auditor, approved_refund):
    client.force_login(auditor)
    page = client.get(reverse("admin:approvals_toolcall_changelist")).content.decode()
    assert "amount: $35.00 · order_id: A-1002 · customer: Lee Wong" in page


def test_a_recognised_term_is_answered_by_the_gin_index(require_postgres, approved_refund):
    queryset = ToolCall.objects.filter(search.calls("lee.wong@example.com")).values("pk")
    sql, params = queryset.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "approvals_toolcall_facts_gin" in plan and "approvals_toolcall_arguments_gin" in plan
