import pytest
from django.urls import reverse

from approvals.models import AuditEvent, ToolCall
from shop.models import OrderNote

pytestmark = pytest.mark.django_db


def test_a_reviewer_undoes_a_reversible_call_from_the_run_page(client, make_run, reviewer):
    run = make_run("Cancel order A-1004, the customer changed their mind.")
    note_call = run.tool_calls.get(tool_name="add_order_note")
    client.force_login(reviewer)
    assert '/undo/"' in client.get(reverse("approvals:run", args=[run.pk])).content.decode()

    client.post(reverse("approvals:call_undo", args=[run.pk, note_call.pk]))

    assert OrderNote.objects.get().removed is True
    assert ToolCall.objects.get(pk=note_call.pk).status == ToolCall.Status.UNDONE
    assert AuditEvent.objects.get(kind="undone").actor == reviewer
    response = client.post(reverse("approvals:call_undo", args=[run.pk, note_call.pk]), follow=True)
    assert "Only executed calls can be undone" in response.content.decode()


def test_a_call_that_is_not_reversible_cannot_be_undone(client, make_run, reviewer):
    run = make_run("Look up order A-1001.")
    call = run.tool_calls.get(tool_name="get_order_status")
    client.force_login(reviewer)
    response = client.post(reverse("approvals:call_undo", args=[run.pk, call.pk]), follow=True)
    assert "Only reversible tools can be undone." in response.content.decode()
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.EXECUTED
