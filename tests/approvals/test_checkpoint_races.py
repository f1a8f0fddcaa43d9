"""Two reviewers deciding one held draft at once (approve and edit; approve and send back), each then
resuming the run: one outcome; one email and one final answer, or one new draft. Real threads, each with its
own PostgreSQL connection, released together per trial."""

import json
from collections import Counter

import pytest

from agents import loop
from approvals import services
from approvals.models import Decision, Message, Run, ToolCall
from shop.models import OutgoingEmail

from .test_races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

DRAFT = {"draft": "Hi Maria, your order has shipped.", "order_id": "A-1003"}
EDITED = {"draft": "Hi Maria, your order shipped today and arrives Friday.", "order_id": "A-1003"}


def held_drafts(requester, count: int) -> list[ToolCall]:
    """Runs of the support agent whose final answer waits as a draft, as the loop holds it (no model)."""
    calls = []
    for _ in range(count):
        run = services.run_create(agent="support", request="Where is order A-1003?", requested_by=requester)
        held = services.ProposedCall("checkpoint-1", "reply_to_customer", json.dumps(DRAFT), ToolCall.Kind.CHECKPOINT)
        services.step_record(run=run, content="", calls=[held])
        Run.objects.filter(pk=run.pk).update(status=Run.Status.WAITING)
        calls.append(run.tool_calls.get())
    return calls


def decide_then_resume(call_id: int, reviewer, verdict: str, arguments: dict | None = None):
    """Decide (or be told it is decided), then resume the run as the decision's task would."""
    call = ToolCall.objects.get(pk=call_id)
    try:
        got = services.toolcall_decide(
            call_id=call_id, reviewer=reviewer, verdict=verdict, shown_hash=call.review_hash, arguments=arguments
        )
    except services.DecisionError as exc:
        got = exc
    loop.advance(call.run_id)
    return got


def test_approve_and_edit_racing_on_one_draft_send_one_email_and_answer_once(
    require_postgres, shop, reviewer, reviewer2, requester
):
    calls = held_drafts(requester, 30)
    assert all(c.kind == ToolCall.Kind.CHECKPOINT and c.is_pending for c in calls)
    results = race(
        {
            "approve": lambda pk: decide_then_resume(pk, reviewer, "approve"),
            "edit": lambda pk: decide_then_resume(pk, reviewer2, "edit", EDITED),
        },
        [c.pk for c in calls],
    )
    winners = Counter()
    for i, call in enumerate(calls):
        got = {name: results[name][i] for name in results}
        won = [name for name, value in got.items() if isinstance(value, Decision)]
        assert len(won) == 1, f"trial {i}: {got}"
        loser = "edit" if won[0] == "approve" else "approve"
        assert isinstance(got[loser], services.AlreadyDecided), f"trial {i}: {got}"
        winners[won[0]] += 1
        sent = (EDITED if won[0] == "edit" else DRAFT)["draft"]
        assert Decision.objects.filter(tool_call=call).count() == 1
        emailed = OutgoingEmail.objects.filter(idempotency_key=call.idempotency_key)
        assert list(emailed.values_list("body", flat=True)) == [sent]
        run = Run.objects.get(pk=call.run_id)
        assert run.status == Run.Status.COMPLETED
        answers = run.messages.filter(role=Message.Role.ASSISTANT, tool_calls=[])
        assert list(answers.values_list("content", flat=True)) == [sent]
    assert OutgoingEmail.objects.count() == len(calls)
    print(f"\n{len(calls)} races; winners: {dict(winners)}")


def send_back_then_resume(call_id: int, reviewer):
    call = ToolCall.objects.get(pk=call_id)
    try:
        got = services.toolcall_respond(
            call_id=call_id, reviewer=reviewer, shown_hash=call.review_hash, reason="No.", guidance="Say sorry."
        )
    except services.DecisionError as exc:
        got = exc
    loop.advance(call.run_id)
    return got


def test_approve_and_send_back_racing_on_one_draft_end_in_one_outcome(
    require_postgres, shop, reviewer, reviewer2, requester, model
):
    calls = held_drafts(requester, 20)
    results = race(
        {
            "approve": lambda pk: decide_then_resume(pk, reviewer, "approve"),
            "send_back": lambda pk: send_back_then_resume(pk, reviewer2),
        },
        [c.pk for c in calls],
    )
    winners = Counter()
    for i, call in enumerate(calls):
        won = [name for name, got in ((n, results[n][i]) for n in results) if isinstance(got, Decision)]
        assert len(won) == 1, f"trial {i}: {[results[n][i] for n in results]}"
        winners[won[0]] += 1
        run = Run.objects.get(pk=call.run_id)
        drafts = run.tool_calls.filter(kind=ToolCall.Kind.CHECKPOINT)
        if won[0] == "approve":  # sent once, and the answer
            assert OutgoingEmail.objects.filter(idempotency_key=call.idempotency_key).count() == 1
            assert run.status == Run.Status.COMPLETED and drafts.count() == 1
        else:  # nothing sent; one new draft, heeding the guidance, waits
            assert not OutgoingEmail.objects.filter(idempotency_key=call.idempotency_key).exists()
            assert run.status == Run.Status.WAITING and drafts.count() == 2
            assert drafts.get(status=ToolCall.Status.PENDING).arguments["draft"].endswith("Say sorry.")
    print(f"\n{len(calls)} races; winners: {dict(winners)}")
