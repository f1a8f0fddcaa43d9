"""The admin of AG-UI agents: a declaration that is not one is a field error and nothing is stored; a good
one is stored as the agent API's declarations are (versioned), and the agent is offered on New run."""

import json

import pytest

from agents.agents import choices
from agui.models import AguiAgent
from remote.models import DeclaredTool

from .aguiagents import REFUND_TOOL

pytestmark = pytest.mark.django_db


def post(admin_client, tools, name="refunds", url="http://127.0.0.1:8599/", offered_tools=()):
    form = {"name": name, "title": "", "endpoint_url": url, "secret_header": "Authorization"}
    form |= {"secret_value": "Bearer s3cret", "tools": json.dumps(tools), "offered_tools": list(offered_tools)}
    return admin_client.post("/admin/agui/aguiagent/add/", form)


def test_a_tool_whose_schema_is_not_an_object_is_a_field_error_and_nothing_is_stored(admin_client):
    response = post(admin_client, {"issue_refund": REFUND_TOOL | {"input_schema": {"type": "string"}}})
    assert response.status_code == 200
    assert "issue_refund: The input schema must describe an object" in response.content.decode()
    assert not AguiAgent.objects.exists() and not DeclaredTool.objects.exists()


def test_an_unknown_tier_is_a_field_error_naming_the_field(admin_client):
    response = post(admin_client, {"issue_refund": REFUND_TOOL | {"tier": "sometimes"}})
    assert "issue_refund: tier:" in response.content.decode()
    assert not AguiAgent.objects.exists()


def test_a_good_entry_declares_its_tools_sends_its_secret_and_is_offered_on_new_run(admin_client):
    response = post(admin_client, {"issue_refund": REFUND_TOOL})
    assert response.status_code == 302
    agent = AguiAgent.objects.get()
    assert agent.headers()["Authorization"] == "Bearer s3cret"
    names = set(DeclaredTool.objects.filter(agent=agent.declarer, current=True).values_list("name", flat=True))
    assert names == {"issue_refund", "question"}
    assert ("refunds", "refunds (AG-UI)") in choices()
    assert "s3cret" not in admin_client.get(f"/admin/agui/aguiagent/{agent.pk}/change/").content.decode()


def test_an_auditor_reads_the_agent_but_never_its_secret(admin_client, client, roles, django_user_model):
    from tests.conftest import _user

    post(admin_client, {"issue_refund": REFUND_TOOL})
    agent = AguiAgent.objects.get()
    client.force_login(_user(django_user_model, "audrey", "auditors", is_staff=True))
    page = client.get(f"/admin/agui/aguiagent/{agent.pk}/change/")
    assert page.status_code == 200 and "refunds" in page.content.decode()
    assert "s3cret" not in page.content.decode()


def test_the_offered_tools_are_chosen_from_reviewhubs_registered_tools_and_stored_by_name(admin_client):
    page = admin_client.get("/admin/agui/aguiagent/add/").content.decode()
    assert 'value="issue_refund"' in page and 'value="delete_customer"' not in page  # forbidden: never offered
    response = post(admin_client, {}, offered_tools=["issue_refund", "get_order_status"])
    assert response.status_code == 302
    assert AguiAgent.objects.get().offered_tools == ["issue_refund", "get_order_status"]


def test_a_forbidden_tool_cannot_be_offered_nor_one_the_agent_declares_itself(admin_client):
    response = post(admin_client, {}, offered_tools=["delete_customer"])
    assert "Select a valid choice. delete_customer is not one of the available choices." in response.content.decode()
    response = post(admin_client, {"issue_refund": REFUND_TOOL}, offered_tools=["issue_refund"])
    assert "The agent declares its own issue_refund: offer another tool." in response.content.decode()
    assert not AguiAgent.objects.exists()
