"""Checkpoints: the support agent's final answer is held as a draft until a person approves, edits or
sends it back; only then is it the run's answer, and the reply is emailed once."""

import pytest
from django.core import checks

from agents import loop
from agents.agents import BEFORE_FINAL_ANSWER, Agent, Checkpoint, after_tool
from agents.agents import registry as agents
from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import AuditEvent, Message, PolicyRule, Run, ToolCall
from approvals.tools import registry
from shop.models import OutgoingEmail

from .reviewing import propose

pytestmark = pytest.mark.django_db

LOOKUP = "Check the status of order A-1003."


def held(run: Run) -> ToolCall:
    return run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT, status=ToolCall.Status.PENDING)


def decide(call: ToolCall, reviewer, verdict: str = "approve", **kwargs):
    return services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, **kwargs
    )


def finished(run: Run) -> Run:
    loop.advance(run.pk)
    run.refresh_from_db()
    return run


def test_a_checkpoint_declares_a_stage_before_the_final_answer():
    checkpoint = Checkpoint(name="reply", title="Reply")
    assert checkpoint.pauses == BEFORE_FINAL_ANSWER
    agent = Agent(name="a", title="A", system_prompt="", checkpoints=(checkpoint,))
    assert agent.final_answer_checkpoint() == checkpoint
    assert Agent(name="b", title="B", system_prompt="").final_answer_checkpoint() is None
    assert Checkpoint(name="plan", title="Plan", pauses=after_tool("draft_plan")).after_tool == "draft_plan"
    assert checkpoint.after_tool == ""
    for wrong in ("after:", "sometimes"):
        with pytest.raises(ValueError):
            Checkpoint(name="plan", title="Plan", pauses=wrong)


def test_manage_check_reports_a_checkpoint_that_is_no_checkpoint_tool(monkeypatch):
    monkeypatch.setattr(agents, "_agents", dict(agents._agents))
    monkeypatch.setattr(registry, "_allowed", dict(registry._allowed))
    agents.register(Agent(name="odd", title="Odd", system_prompt="", checkpoints=(Checkpoint("send_email", "Mail"),)))
    errors = [e.msg for e in checks.run_checks() if e.id == "agents.E003"]
    assert errors == [
        "Agent 'odd' declares the checkpoint 'send_email', which is not a registered tool of kind checkpoint."
    ]


def test_a_checkpoint_is_never_offered_to_the_model():
    offered = [spec["function"]["name"] for spec in registry.openai_specs(agent="support")]
    assert "reply_to_customer" not in offered and "lookup_customer" in offered
    assert "reply_to_customer" in registry.allowed("support")


def test_a_model_that_calls_the_checkpoint_by_name_is_refused_as_an_unknown_tool(run):
    call = propose(run, "reply_to_customer", {"draft": "Sent you a million dollars."})
    assert call.status == ToolCall.Status.INVALID and call.kind == ToolCall.Kind.CALL
    assert call.output.startswith("Error: there is no tool named 'reply_to_customer'")
    assert "reply_to_customer" not in call.output.split("Available tools:")[1]


def test_the_final_answer_waits_as_a_draft(make_run, model):
    run = make_run(LOOKUP)
    assert run.status == Run.Status.WAITING
    call = held(run)
    assert call.tool_name == "reply_to_customer" and call.description == "Reply to the customer"
    assert call.arguments["draft"].startswith("Here is what happened:") and call.arguments["order_id"] == "A-1003"
    assert call.arguments_hash == args_hash(call.arguments)
    assert call.facts["customer_email"] == "maria.garcia@example.com"
    assert call.expires_at is not None
    # Valid chat: the held reply is an assistant message whose one call is the checkpoint.
    step = run.messages.order_by("-seq").first()
    assert step.role == Message.Role.ASSISTANT and step.tool_calls[0]["id"] == call.call_id
    assert OutgoingEmail.objects.count() == 0 and len(model.requests()) == 2


def test_approving_sends_the_reply_once_and_completes_with_the_draft(make_run, reviewer):
    run = make_run(LOOKUP)
    call = held(run)
    decide(call, reviewer)
    run = finished(run)
    assert run.status == Run.Status.COMPLETED
    answer = run.messages.order_by("-seq").first()
    assert answer.role == Message.Role.ASSISTANT and not answer.tool_calls
    assert answer.content == call.arguments["draft"]
    email = OutgoingEmail.objects.get()
    assert email.to == "maria.garcia@example.com" and email.body == call.arguments["draft"]
    assert email.idempotency_key == call.idempotency_key
    finished(run)  # a stray resumption sends nothing and answers nothing more
    assert OutgoingEmail.objects.count() == 1 and run.messages.filter(role="assistant", tool_calls=[]).count() == 1
    kinds = list(run.audit_events.values_list("kind", flat=True))
    assert AuditEvent.Kind.EXECUTED in kinds and kinds[-1] == AuditEvent.Kind.COMPLETED


def test_an_edit_sends_the_edited_text(make_run, reviewer):
    run = make_run(LOOKUP)
    call = held(run)
    edited = {"draft": "Hi Maria, your order is on its way.", "order_id": "A-1003"}
    decide(call, reviewer, "edit", arguments=edited)
    run = finished(run)
    assert run.status == Run.Status.COMPLETED
    assert run.messages.order_by("-seq").first().content == edited["draft"]
    assert OutgoingEmail.objects.get().body == edited["draft"]


def test_an_empty_edit_is_refused_with_a_field_error_and_nothing_changes(make_run, reviewer):
    call = held(make_run(LOOKUP))
    with pytest.raises(services.EditInvalid) as error:
        decide(call, reviewer, "edit", arguments={"draft": "", "order_id": "A-1003"})
    assert "draft" in error.value.errors
    call.refresh_from_db()
    assert call.is_pending and not call.decisions.exists()


def test_a_decision_on_a_stale_draft_is_refused(make_run, reviewer, reviewer2):
    call = held(make_run(LOOKUP))
    shown = call.review_hash
    with pytest.raises(services.StaleView):
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=args_hash({"draft": "something else"})
        )
    decide(call, reviewer, "approve")
    with pytest.raises(services.AlreadyDecided):
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer2, verdict="approve", shown_hash=shown)


def test_sending_back_yields_a_second_draft_that_heeds_the_guidance(make_run, reviewer, model):
    run = make_run(LOOKUP)
    first = held(run)
    services.toolcall_respond(
        call_id=first.pk,
        reviewer=reviewer,
        shown_hash=first.review_hash,
        reason="Too terse.",
        guidance="Tell her the parcel left the warehouse today.",
    )
    run = finished(run)
    assert run.status == Run.Status.WAITING and OutgoingEmail.objects.count() == 0
    second = held(run)
    assert second.pk != first.pk and second.tool_name == first.tool_name
    assert second.arguments["draft"].startswith(first.arguments["draft"])
    assert "Tell her the parcel left the warehouse today." in second.arguments["draft"]
    seen = model.requests()[-1]["messages"]
    assert seen[-2]["role"] == "tool" and seen[-2]["content"].startswith("Rejected by reviewer: Too terse.")
    assert seen[-1]["role"] == "user" and "left the warehouse" in seen[-1]["content"]
    decide(second, reviewer)
    assert finished(run).status == Run.Status.COMPLETED
    assert OutgoingEmail.objects.get().body == second.arguments["draft"]


def test_an_expired_draft_is_not_sent_and_the_run_fails_with_the_reason(make_run, requester, model):
    run = make_run(LOOKUP)
    services.toolcall_expire(call_id=held(run).pk)
    run = finished(run)
    assert run.status == Run.Status.FAILED
    assert "was not reviewed in time: it was not sent" in run.last_error
    assert OutgoingEmail.objects.count() == 0
    assert not run.messages.filter(role="assistant", tool_calls=[]).exists()
    finished(run)  # a stray resumption changes nothing
    assert Run.objects.get(pk=run.pk).status == Run.Status.FAILED and len(model.requests()) == 2

    services.run_retry(run=run, user=requester)  # the model reads that the draft expired, and writes a new one
    run = finished(run)
    assert run.status == Run.Status.WAITING and len(model.requests()) == 3
    assert held(run).arguments["draft"].startswith("Here is what happened:")


def test_a_dry_run_approves_the_draft_and_emails_nobody(make_run, reviewer):
    run = make_run(LOOKUP, dry_run=True)
    call = held(run)
    decide(call, reviewer)
    run = finished(run)
    assert run.status == Run.Status.COMPLETED and OutgoingEmail.objects.count() == 0
    assert run.messages.order_by("-seq").first().content == call.arguments["draft"]


def test_a_policy_rule_can_let_the_reply_go_without_review(make_run):
    PolicyRule.objects.create(name="Replies go", tool_name="reply_to_customer", outcome=PolicyRule.Outcome.RUN)
    run = make_run(LOOKUP)
    assert run.status == Run.Status.COMPLETED
    reply = run.tool_calls.get(kind=ToolCall.Kind.CHECKPOINT)
    assert reply.status == ToolCall.Status.EXECUTED and not reply.decisions.exists()
    assert OutgoingEmail.objects.get().body == run.messages.order_by("-seq").first().content
