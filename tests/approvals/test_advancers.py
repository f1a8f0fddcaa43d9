"""Who advances a run is one seam (approvals/advancers.py): an advancer registered here, as an app would from its
AppConfig.ready(), changes what the core does with its runs without an edit of the core."""

from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic import BaseModel

from approvals import advancers, services
from approvals.advancers import Advancer
from approvals.models import Message, Run, Tier, ToolCall
from approvals.tools import Tool, registry
from tests import support
from tests.reviewing import propose

pytestmark = pytest.mark.django_db

ELSEWHERE = {
    "name": "test",
    "resume": "TEST_ADVANCER_RESUME",
    "starts_runs": True,
    "calls_model": False,
    "told_of_changes": True,
    "agent_facts": True,
    "reports_results": False,
    "note": "runs in the test's own runtime",
}


class NoteArgs(BaseModel):
    text: str


NOTE = Tool("write_note", "Writes a note.", NoteArgs, Tier.APPROVAL, lambda args, ctx=None: "written")


@pytest.fixture
def commits(django_capture_on_commit_callbacks):
    return django_capture_on_commit_callbacks


@pytest.fixture
def register(settings):
    """Register an advancer named "test" with these capabilities (besides ELSEWHERE's); gone after the test."""
    settings.TEST_ADVANCER_RESUME = "tests.support.record_resume"

    def make(**capabilities) -> Advancer:
        return advancers.register(Advancer(**(ELSEWHERE | capabilities)))

    yield make
    advancers.unregister("test")


def quiet_run(advanced_by: str, requester) -> Run:
    """An active run nothing has moved for an hour."""
    run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by=advanced_by)
    hour_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=run.pk).update(created_at=hour_ago, updated_at=hour_ago, status=Run.Status.RUNNING)
    Message.objects.filter(run=run).update(created_at=hour_ago)
    return run


def test_each_kind_of_run_has_the_advancer_its_app_registered():
    for advanced_by in Run.AdvancedBy.values:
        assert Run(advanced_by=advanced_by).advancer.name == advanced_by
    assert Run().advancer.calls_model and not Run(advanced_by="remote").advancer.calls_model


def test_a_run_whose_advancer_is_not_installed_is_never_resumed_nor_executed(shop, requester, commits):
    with commits(execute=True):
        run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="gone")
    call = ToolCall(run=run, tool_name="issue_refund")

    assert run.advancer is advancers.NOBODY and support.resumed == []
    assert registry.for_call(call) is None and not run.advancer.executes(call)


def test_a_new_run_is_resumed_through_its_advancers_own_setting(register, shop, requester, commits):
    register()
    with commits(execute=True):
        run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")
    assert support.resumed == [run.pk]


def test_a_new_run_of_an_advancer_that_runs_it_already_is_not_resumed(register, shop, requester, commits):
    register(starts_runs=False)
    with commits(execute=True):
        services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")
    assert support.resumed == []


def test_a_remote_agents_first_proposal_does_not_call_the_remote_seam(refund_agent, settings, commits):
    settings.REVIEWHUB_REMOTE_RESUME = "tests.support.record_resume"
    with commits(execute=True):
        refund_agent.propose()
    assert ToolCall.objects.get().run.advanced_by == Run.AdvancedBy.REMOTE
    assert support.resumed == []


def test_the_gate_takes_a_calls_tool_from_its_advancer(register, shop, requester):
    register(tool_for_call=lambda call: NOTE if call.tool_name == "write_note" else None)
    run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")

    held = propose(run, "write_note", {"text": "hi"})
    unknown = propose(run, "issue_refund", {"order_id": "A-1001", "amount": 5, "reason": "x"}, call_id="call_2")

    assert held.status == ToolCall.Status.PENDING and registry.for_call(held) is NOTE
    assert unknown.status == ToolCall.Status.INVALID  # the registry's tools are not this runtime's


def test_reviewhub_executes_only_what_the_advancer_says_it_executes(register, shop, requester):
    register(tool_for_call=lambda call: NOTE)
    run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")
    call = propose(run, "write_note", {"text": "hi"})
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.APPROVED, approved_arguments={"text": "hi"})

    assert services.toolcall_execute(call=call) is False
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.APPROVED


def test_the_sweep_takes_over_only_runs_whose_model_reviewhub_calls(register, shop, requester):
    register(calls_model=False)
    elsewhere = quiet_run("test", requester)
    assert elsewhere.pk not in services.stuck_runs()

    register(calls_model=True)
    assert services.stuck_runs()[elsewhere.pk] == "nothing was taking the run further"


def test_a_cancelled_runs_advancer_hears_of_its_cancelled_calls_if_it_asks_to(register, shop, requester, commits):
    for told in (False, True):
        register(told_of_changes=told, tool_for_call=lambda call: NOTE)
        run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")
        propose(run, "write_note", {"text": "hi"})
        support.resumed.clear()
        with commits(execute=True):
            services.run_cancel(run=run, user=requester)
        assert support.resumed == ([run.pk] if told else [])


def test_the_run_page_says_what_the_advancer_says_of_its_runs(register, shop, requester, admin_client):
    register()
    run = services.run_create(agent="support", request="Help.", requested_by=requester, advanced_by="test")
    page = admin_client.get(f"/runs/{run.pk}/").content.decode()
    assert "(runs in the test&#x27;s own runtime)" in page
