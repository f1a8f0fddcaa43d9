"""Two reviewers deciding the same held model turn at once, on PostgreSQL: exactly one decision, one outcome;
and the decision racing the expiry: one of them."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.lib.hashing import args_hash, canonical_json
from approvals.models import Decision, Message, Run, ToolCall

from .test_races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def held_turns(run: Run, count: int, expires_at=None) -> list[ToolCall]:
    """Pending model turns, one per transcript row, as the loop holds them."""
    rows = Message.objects.bulk_create(
        Message(run=run, seq=seq, role="user", content=f"Customer message {seq}") for seq in range(count)
    )
    calls = []
    for row in rows:
        arguments = {"step": row.seq + 1, "transcript_sha256": "a" * 64}
        calls.append(
            ToolCall(
                run=run,
                message=row,
                call_id=f"turn-{row.seq + 1}",
                kind=ToolCall.Kind.TURN,
                tool_name="model turn",
                status=ToolCall.Status.PENDING,
                arguments=arguments,
                raw_arguments=canonical_json(arguments),
                arguments_hash=args_hash(arguments),
                expires_at=expires_at,
            )
        )
    return ToolCall.objects.bulk_create(calls)


def decider(reviewer, verdict, text=""):
    return lambda pk: services.turn_decide(
        call_id=pk,
        reviewer=reviewer,
        verdict=verdict,
        shown_hash=ToolCall.objects.get(pk=pk).review_hash,
        text=text,
    )


def test_two_reviewers_deciding_one_turn_at_once_end_in_one_decision(require_postgres, reviewer, reviewer2, requester):
    trials = 100
    run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
    calls = held_turns(run, trials)
    results = race(
        {"alice": decider(reviewer, "note", "Be brief."), "bob": decider(reviewer2, "reply", "Delivered Monday.")},
        [c.pk for c in calls],
    )
    winners = Counter()
    for i, call in enumerate(calls):
        call.refresh_from_db()
        got = {name: results[name][i] for name in results}
        won = [name for name, value in got.items() if isinstance(value, Decision)]
        assert len(won) == 1, f"trial {i}: {got}"
        lost = [value for name, value in got.items() if name not in won]
        assert isinstance(lost[0], services.AlreadyDecided), f"trial {i}: {got}"
        winners[won[0]] += 1
        decisions = list(Decision.objects.filter(tool_call=call))
        assert len(decisions) == 1 and decisions[0].reviewer.username == won[0]
        assert decisions[0].verdict == ("note" if won[0] == "alice" else "reply")
        assert call.status == ToolCall.Status.APPROVED
    assert not run.messages.filter(role="tool").exists()
    print(f"\n{trials} races; winners: {dict(winners)}")


def test_a_decision_racing_the_expiry_of_a_turn_ends_in_one_outcome(require_postgres, reviewer, requester):
    trials = 60
    calls = []
    runs = []
    for _ in range(trials):  # one run each: an expiry fails its run
        run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
        runs.append(run)
        calls += held_turns(run, 1, expires_at=timezone.now() - timedelta(seconds=1))
    results = race(
        {
            "continue": decider(reviewer, "approve"),
            "expire": lambda pk: services.toolcall_expire(call_id=pk, now=timezone.now()),
        },
        [c.pk for c in calls],
    )
    for i, (call, run) in enumerate(zip(calls, runs)):
        call.refresh_from_db()
        run.refresh_from_db()
        decided, expired = results["continue"][i], results["expire"][i]
        assert Decision.objects.filter(tool_call=call).count() == 1
        if isinstance(decided, Decision):
            assert expired is None and call.status == ToolCall.Status.APPROVED
            assert run.status == Run.Status.WAITING
        else:
            assert isinstance(decided, services.AlreadyDecided) and isinstance(expired, Decision)
            assert call.status == ToolCall.Status.EXPIRED and run.status == Run.Status.FAILED
