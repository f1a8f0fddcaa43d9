"""Who may see and act on runs: retry, cancel, undo, new runs, run pages and the runs list.

The rules are approvals/access/'s; each is checked here at the door (the view)
and behind it (the service), so that a caller other than a view is held to them too.
"""

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse

from approvals import services
from approvals.models import Run, ToolCall, ToolSetting
from shop.models import OrderNote
from tests.reviewing import NOTE_CALL, REFUND_CALL, run_with

pytestmark = pytest.mark.django_db


def failed_run(user) -> Run:
    run = run_with(user)
    services.run_fail(run=run, error="The model did not answer.")
    return run


def post_as(client, user, name: str, *args, **data):
    client.force_login(user)
    return client.post(reverse(name, args=args), data)


@pytest.fixture
def refunds_for_senior(roles):
    ToolSetting.objects.create(tool_name="issue_refund", group=Group.objects.get(name="senior"))


# --- retry and cancel ---------------------------------------------------------------------------


def test_a_user_who_may_not_see_a_run_cannot_cancel_it(client, shop, requester, outsider):
    run = run_with(requester)
    assert post_as(client, outsider, "approvals:run_cancel", run.pk).status_code == 404
    with pytest.raises(services.NotAllowed):
        services.run_cancel(run=run, user=outsider)
    run.refresh_from_db()
    assert run.is_active


def test_the_auditor_cannot_cancel_or_retry_a_run(client, shop, requester, auditor):
    running, failed = run_with(requester), failed_run(requester)
    steps = failed.max_steps
    assert post_as(client, auditor, "approvals:run_cancel", running.pk).status_code == 403
    assert post_as(client, auditor, "approvals:run_retry", failed.pk).status_code == 403
    with pytest.raises(services.NotAllowed, match="Auditors"):
        services.run_retry(run=failed, user=auditor)
    running.refresh_from_db()
    failed.refresh_from_db()
    assert running.is_active
    assert (failed.status, failed.max_steps) == (Run.Status.FAILED, steps)


def test_a_reviewer_outside_the_group_of_a_call_in_the_run_cannot_retry_it(
    client, shop, requester, reviewer, refunds_for_senior
):
    run = run_with(requester, REFUND_CALL)
    services.run_fail(run=run, error="The model did not answer.")
    assert post_as(client, reviewer, "approvals:run_retry", run.pk).status_code == 404
    with pytest.raises(services.NotAllowed):
        services.run_retry(run=run, user=reviewer)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED


def test_a_reviewer_who_may_see_the_run_retries_it(client, shop, requester, reviewer):
    run = failed_run(requester)
    assert post_as(client, reviewer, "approvals:run_retry", run.pk).status_code == 302
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED


def test_a_requester_without_review_permission_cancels_their_own_run(client, shop, outsider):
    run = run_with(outsider)
    assert post_as(client, outsider, "approvals:run_cancel", run.pk).status_code == 302
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED


def test_the_run_page_shows_retry_and_cancel_only_to_who_may_use_them(client, shop, requester, reviewer, auditor):
    failed = failed_run(requester)
    client.force_login(auditor)
    assert "/retry/" not in client.get(reverse("approvals:run", args=[failed.pk])).content.decode()
    client.force_login(reviewer)
    assert "/retry/" in client.get(reverse("approvals:run", args=[failed.pk])).content.decode()


# --- new runs -------------------------------------------------------------------------------------


def test_the_auditor_cannot_start_a_run(client, auditor):
    client.force_login(auditor)
    assert client.get(reverse("agents:new_run")).status_code == 403
    response = client.post(reverse("agents:new_run"), {"agent": "support", "request": "Refund everything."})
    assert response.status_code == 403
    with pytest.raises(services.NotAllowed, match="Auditors"):
        services.run_create(agent="support", request="Refund everything.", requested_by=auditor)
    assert not Run.objects.exists()


def test_the_auditor_cannot_start_a_run_from_the_shell(auditor):
    with pytest.raises(CommandError, match="audrey may not start runs"):
        call_command("start_run", "Refund everything.", "--user", "audrey")
    assert not Run.objects.exists()


def test_the_new_run_link_is_hidden_from_the_auditor(client, auditor, outsider):
    client.force_login(auditor)
    assert reverse("agents:new_run") not in client.get(reverse("agents:runs")).content.decode()
    client.force_login(outsider)
    assert reverse("agents:new_run") in client.get(reverse("agents:runs")).content.decode()


# --- undo -----------------------------------------------------------------------------------------


def test_the_requester_cannot_undo_their_own_runs_calls(client, shop, requester):
    note = run_with(requester, NOTE_CALL).tool_calls.get()
    client.force_login(requester)
    assert "/undo/" not in client.get(reverse("approvals:run", args=[note.run_id])).content.decode()
    assert post_as(client, requester, "approvals:call_undo", note.run_id, note.pk).status_code == 403
    with pytest.raises(services.NotAllowed, match="You requested this run"):
        services.toolcall_undo(call=note, user=requester)
    assert (ToolCall.objects.get(pk=note.pk).status, OrderNote.objects.get().removed) == ("executed", False)


def test_a_reviewer_outside_the_tools_group_cannot_undo_its_calls(client, shop, requester, reviewer, senior):
    ToolSetting.objects.create(tool_name="add_order_note", group=Group.objects.get(name="senior"))
    note = run_with(requester, NOTE_CALL).tool_calls.get()
    client.force_login(reviewer)
    assert "/undo/" not in client.get(reverse("approvals:run", args=[note.run_id])).content.decode()
    assert post_as(client, reviewer, "approvals:call_undo", note.run_id, note.pk).status_code == 403
    with pytest.raises(services.NotAllowed, match="senior"):
        services.toolcall_undo(call=note, user=reviewer)
    assert OrderNote.objects.get().removed is False

    assert post_as(client, senior, "approvals:call_undo", note.run_id, note.pk).status_code == 302
    assert OrderNote.objects.get().removed is True


def test_the_auditor_cannot_undo(client, shop, requester, auditor):
    note = run_with(requester, NOTE_CALL).tool_calls.get()
    assert post_as(client, auditor, "approvals:call_undo", note.run_id, note.pk).status_code == 403
    with pytest.raises(services.NotAllowed, match="Auditors"):
        services.toolcall_undo(call=note, user=auditor)
    assert OrderNote.objects.get().removed is False


# --- what run pages and the runs list show --------------------------------------------------------


def test_a_reviewer_who_may_not_see_a_call_cannot_read_its_arguments_on_the_run_page(
    client, shop, requester, reviewer, refunds_for_senior
):
    run = run_with(requester, REFUND_CALL)
    call = run.tool_calls.get()
    client.force_login(reviewer)
    assert client.get(reverse("approvals:call", args=[call.pk])).status_code == 404
    assert client.get(reverse("approvals:run", args=[run.pk])).status_code == 404
    assert client.get(reverse("approvals:run", args=[run.pk]), headers={"HX-Request": "true"}).status_code == 404
    assert "Item arrived damaged" not in client.get(reverse("agents:runs")).content.decode()


def test_a_user_without_review_permission_sees_only_the_runs_they_requested(client, shop, requester, outsider):
    theirs, mine = run_with(requester, REFUND_CALL), run_with(outsider)
    client.force_login(outsider)
    assert client.get(reverse("approvals:run", args=[theirs.pk])).status_code == 404
    assert client.get(reverse("approvals:run", args=[mine.pk])).status_code == 200
    listed = client.get(reverse("agents:runs")).context["runs"]
    assert [run.pk for run in listed] == [mine.pk]


def test_the_requester_reads_their_own_runs_restricted_call(client, shop, outsider, refunds_for_senior):
    run = run_with(outsider, REFUND_CALL)
    client.force_login(outsider)
    assert "Item arrived damaged" in client.get(reverse("approvals:run", args=[run.pk])).content.decode()
    assert client.get(reverse("approvals:call", args=[run.tool_calls.get().pk])).status_code == 200


def test_a_reviewer_lists_the_runs_whose_calls_they_may_all_see(
    client, shop, requester, reviewer, senior, auditor, refunds_for_senior
):
    restricted, open_ = run_with(requester, REFUND_CALL), run_with(requester, NOTE_CALL)
    client.force_login(reviewer)
    assert [run.pk for run in client.get(reverse("agents:runs")).context["runs"]] == [open_.pk]
    for user in (senior, auditor):
        client.force_login(user)
        assert {run.pk for run in client.get(reverse("agents:runs")).context["runs"]} == {restricted.pk, open_.pk}
