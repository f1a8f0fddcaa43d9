"""Two reviewers answering one question at once, a third declining it and the expiry: exactly one outcome, and
the tool's output recorded once. Real threads, each with its own PostgreSQL connection (tests/test_races.py)."""

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import Decision, Message, Run, ToolCall

from .test_races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

SCHEMA = {"type": "object", "properties": {"order_id": {"enum": ["A-1001", "A-1005"]}}, "required": ["order_id"]}
QUESTION = {"prompt": "Which order?", "schema": SCHEMA, "payload": {}}
ARGUMENTS = {"email": "dana.smith@example.com"}
STATUS_OF = {
    "alice": ToolCall.Status.EXECUTED,
    "bob": ToolCall.Status.EXECUTED,
    "carol": ToolCall.Status.REJECTED,
    "expire": ToolCall.Status.EXPIRED,
}


def overdue_questions(run: Run, count: int) -> list[ToolCall]:
    messages = Message.objects.bulk_create(
        Message(run=run, seq=seq, role="assistant", content="Which?", tool_calls=[{"id": f"q{seq}"}])
        for seq in range(1, count + 1)
    )
    past = timezone.now() - timedelta(seconds=1)
    return ToolCall.objects.bulk_create(
        ToolCall(
            run=run,
            message=message,
            call_id=f"q{message.seq}",
            kind=ToolCall.Kind.QUESTION,
            question=QUESTION,
            tool_name="choose_order",
            tier="read_only",
            status=ToolCall.Status.PENDING,
            arguments=ARGUMENTS,
            approved_arguments=ARGUMENTS,
            arguments_hash=args_hash(ARGUMENTS),
            expires_at=past,
        )
        for message in messages
    )


def test_two_answers_a_decline_and_the_expiry_racing_on_a_question_end_in_one_outcome(
    require_postgres, shop, reviewer, reviewer2, requester, django_user_model
):
    carol = django_user_model.objects.create_user(username="carol", password="pw")
    carol.groups.add(Group.objects.get(name="reviewers"))
    trials = 60
    run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
    calls = overdue_questions(run, trials)
    shown = args_hash(QUESTION)

    def answering(reviewer, order):
        return lambda pk: services.toolcall_answer(
            call_id=pk, reviewer=reviewer, shown_hash=shown, answer={"order_id": order}
        )

    results = race(
        {
            "alice": answering(reviewer, "A-1001"),
            "bob": answering(reviewer2, "A-1005"),
            "carol": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=carol, verdict="reject", shown_hash=shown, reason="Ask the customer."
            ),
            "expire": lambda pk: services.toolcall_expire(call_id=pk, now=timezone.now()),
        },
        [c.pk for c in calls],
    )
    winners = Counter()
    for i, call in enumerate(calls):
        call.refresh_from_db()
        got = {name: results[name][i] for name in results}
        won = [name for name, value in got.items() if isinstance(value, Decision)]
        assert len(won) == 1, f"trial {i}: {got}"
        winner = won[0]
        winners[winner] += 1
        assert Decision.objects.filter(tool_call=call).count() == 1
        assert call.status == STATUS_OF[winner]
        for name, value in got.items():
            if name != winner:
                assert value is None if name == "expire" else isinstance(value, services.AlreadyDecided), got
        outputs = list(run.messages.filter(role="tool", tool_call_id=call.call_id).values_list("content", flat=True))
        assert len(outputs) == 1
        if winner in ("alice", "bob"):
            assert outputs == [
                f'{{"order_id": "{"A-1001" if winner == "alice" else "A-1005"}", "chosen_by": "a reviewer"}}'
            ]
    print(f"\n{trials} races; winners: {dict(winners)}")
