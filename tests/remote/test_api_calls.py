"""Proposing calls through the agent API: the same gate, queue, policy and decisions as the model's calls."""

from django.test import Client

from approvals import access, services
from approvals.models import AuditEvent, Decision, PolicyRule, Run, ToolCall
from remote.models import RemoteCall
from tests.agentapi import PROPOSAL


def test_a_proposal_becomes_a_pending_call_in_the_run_of_its_thread(refund_agent):
    response = refund_agent.post("/calls", PROPOSAL)

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "pending" and body["decision"] is None and body["tool"] == "issue_refund"
    call = ToolCall.objects.select_related("run").get(pk=body["id"])
    assert call.run.advanced_by == Run.AdvancedBy.REMOTE and call.run.requested_by == refund_agent.agent.user
    assert call.run.status == Run.Status.WAITING
    assert call.tool_name == "support-bot.issue_refund"
    assert call.description == "Refund $490 on order A-1001"
    assert call.agent_facts == {"order_total": "$49.00"} and call.facts == {}
    assert call.reasoning == PROPOSAL["reasoning"] and call.user_request == PROPOSAL["user_request"]
    assert AuditEvent.objects.filter(tool_call=call, kind="proposed").exists()


def test_proposals_of_one_thread_share_a_run_and_other_threads_get_their_own(refund_agent):
    first = refund_agent.propose()
    second = refund_agent.propose(idempotency_key="4711-2")
    third = refund_agent.propose(idempotency_key="4712-1", thread_id="support-4712")

    runs = {ToolCall.objects.get(pk=c["id"]).run_id for c in (first, second)}
    assert len(runs) == 1
    assert ToolCall.objects.get(pk=third["id"]).run_id not in runs


def test_the_same_idempotency_key_returns_the_same_call(refund_agent):
    first = refund_agent.post("/calls", PROPOSAL)
    again = refund_agent.post("/calls", PROPOSAL)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert ToolCall.objects.count() == 1


def test_the_same_idempotency_key_with_another_body_is_a_conflict(refund_agent):
    refund_agent.propose()

    response = refund_agent.post("/calls", PROPOSAL | {"arguments": PROPOSAL["arguments"] | {"amount": 49}})

    assert response.status_code == 409
    assert "idempotency_key" in response.json()["errors"]
    assert ToolCall.objects.count() == 1


def test_arguments_that_fail_the_declared_schema_are_refused_naming_the_field(refund_agent):
    response = refund_agent.post("/calls", PROPOSAL | {"arguments": {"order_id": "A-1001", "amount": -5}})

    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["arguments.amount"]
    assert not ToolCall.objects.exists() and not Run.objects.exists()


def test_missing_and_unknown_arguments_are_named(refund_agent):
    response = refund_agent.post("/calls", PROPOSAL | {"arguments": {"order_id": "A-1001", "coupon": "X"}})

    errors = response.json()["errors"]
    assert response.status_code == 422
    assert errors["arguments.amount"] == ["This field is required."]
    assert errors["arguments.coupon"] == ["Unknown field."]


def test_an_undeclared_tool_is_not_found(agent):
    response = agent.post("/calls", PROPOSAL)
    assert response.status_code == 404
    assert not ToolCall.objects.exists()


def test_a_forbidden_tool_is_refused(agent):
    agent.declare(tier="forbidden")

    response = agent.post("/calls", PROPOSAL)

    assert response.status_code == 422
    assert "forbidden" in response.json()["errors"]["tool"][0]
    assert not ToolCall.objects.exists()


def test_a_rule_that_forbids_the_call_refuses_it_and_the_trail_says_so(refund_agent):
    PolicyRule.objects.create(
        name="No big refunds",
        tool_name="support-bot.issue_refund",
        field="amount",
        operator=">",
        value=100,
        outcome="forbid",
    )

    response = refund_agent.post("/calls", PROPOSAL)

    assert response.status_code == 422
    assert AuditEvent.objects.filter(kind="forbidden").exists()


def test_a_rule_that_runs_small_calls_answers_approved_with_an_execution_key(refund_agent):
    PolicyRule.objects.create(
        name="Small refunds",
        tool_name="support-bot.issue_refund",
        field="amount",
        operator="<=",
        value=20,
        outcome="run",
    )

    body = refund_agent.propose(arguments={"order_id": "A-1003", "amount": 7.5})

    assert body["status"] == "approved"
    assert body["decision"]["verdict"] == "approve" and body["decision"]["reviewer"] is None
    assert body["decision"]["execution_key"].startswith("ek_")


def test_a_rule_of_a_local_tool_of_the_same_name_does_not_apply(refund_agent):
    PolicyRule.objects.create(name="Local refunds run", tool_name="issue_refund", outcome="run")

    assert refund_agent.propose()["status"] == "pending"


def test_the_call_is_in_the_reviewers_queue_with_the_agents_facts_apart(refund_agent, reviewer):
    call = refund_agent.propose()
    client = Client()
    client.force_login(reviewer)

    queue = client.get("/").content.decode()
    page = client.get(f"/calls/{call['id']}/").content.decode()  # the card the queue's row opens

    assert f'id="row-{call["id"]}"' in queue and "Refund $490 on order A-1001" in queue
    assert f'id="call-{call["id"]}"' in page and "Refund $490 on order A-1001" in page
    assert "from the agent's code" in page and "$49.00" in page


def test_the_panel_offers_only_the_decisions_the_tool_allows(agent, reviewer):
    agent.declare(decisions=["approve", "reject"])
    call = agent.propose()
    client = Client()
    client.force_login(reviewer)

    for headers in ({}, {"HX-Request": "true"}):  # the call page, and its card in the queue's pane
        page = client.get(f"/calls/{call['id']}/", headers=headers).content.decode()
        assert "Approve</button>" in page and ">Reject</button>" in page, headers
        assert "Edit…" not in page and ">Respond</button>" not in page, headers


def test_a_decision_the_tool_does_not_allow_is_refused(agent, reviewer):
    agent.declare(decisions=["approve", "reject"])
    call = ToolCall.objects.get(pk=agent.propose()["id"])

    try:
        services.toolcall_respond(
            call_id=call.pk, reviewer=reviewer, shown_hash=call.review_hash, reason="No.", guidance="Do less."
        )
    except services.NotAllowed as exc:
        assert "respond" in str(exc)
    else:
        raise AssertionError("respond was accepted")
    assert not Decision.objects.exists()


def test_an_edit_decided_by_a_reviewer_comes_back_with_the_arguments_to_execute(refund_agent, reviewer):
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])
    edited = PROPOSAL["arguments"] | {"amount": 49}

    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="edit", shown_hash=call.review_hash, arguments=edited
    )
    body = refund_agent.get(f"/calls/{call.pk}").json()

    assert body["status"] == "approved"
    decision = body["decision"]
    assert decision["verdict"] == "edit" and decision["reviewer"] == "alice"
    assert decision["arguments"] == edited
    assert decision["changes"] == [{"field": "amount", "before": 490, "after": 49}]
    assert decision["execution_key"].startswith("ek_")


def test_a_rejection_with_guidance_comes_back_as_respond(refund_agent, reviewer):
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])

    services.toolcall_respond(
        call_id=call.pk, reviewer=reviewer, shown_hash=call.review_hash, reason="Too much.", guidance="Refund $49."
    )
    body = refund_agent.get(f"/calls/{call.pk}").json()

    assert body["status"] == "rejected"
    assert body["decision"]["verdict"] == "respond" and body["decision"]["guidance"] == "Refund $49."
    assert body["decision"]["execution_key"] is None and body["decision"]["arguments"] is None


def test_the_agents_user_cannot_decide_its_own_calls(refund_agent):
    call = ToolCall.objects.select_related("run").get(pk=refund_agent.propose()["id"])
    user = refund_agent.agent.user
    user.is_superuser = True
    user.save()

    allowed, why = access.can_decide(user, call)

    assert not allowed and "requested this run" in why


def test_a_remote_call_resolves_to_its_declared_tool_version(agent):
    agent.declare()
    call = ToolCall.objects.select_related("run").get(pk=agent.propose()["id"])
    agent.declare(description_template="Give back ${amount}")

    tool = services.tool_for(call)

    assert tool.render_description(tool.parse(call.arguments)) == "Refund $490 on order A-1001"
    assert RemoteCall.objects.get(pk=call.pk).tool.version == 1


def test_a_policy_rule_for_a_remote_tool_can_be_made_in_the_admin(refund_agent, django_user_model):
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root"))
    rule = {
        "name": "Small ones run",
        "tool_name": "support-bot.issue_refund",
        "field": "amount",
        "operator": "<=",
        "value": "20",
        "outcome": "run",
        "required_approvals": 1,
        "order": 0,
        "enabled": "on",
    }

    response = admin.post("/admin/approvals/policyrule/add/", rule)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert refund_agent.propose(arguments={"order_id": "A-1", "amount": 5})["status"] == "approved"


def test_an_expired_call_comes_back_expired_and_wakes_nobody_locally(refund_agent):
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])

    services.toolcall_expire(call_id=call.pk, reason="nobody decided in time")
    body = refund_agent.get(f"/calls/{call.pk}").json()

    assert body["status"] == "expired" and body["decision"]["verdict"] == "expire"
    assert body["decision"]["execution_key"] is None


def test_a_rule_asking_two_reviewers_keeps_the_call_pending_after_one(refund_agent, reviewer, reviewer2):
    PolicyRule.objects.create(
        name="Two eyes", tool_name="support-bot.issue_refund", operator="any", outcome="review", required_approvals=2
    )
    call = ToolCall.objects.get(pk=refund_agent.propose()["id"])

    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    assert refund_agent.get(f"/calls/{call.pk}").json()["decision"] is None
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer2, verdict="approve", shown_hash=call.review_hash)

    assert refund_agent.get(f"/calls/{call.pk}").json()["status"] == "approved"
