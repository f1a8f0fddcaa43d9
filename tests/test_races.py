"""Approve, reject and expiry racing on one call end in exactly one final state.

Real threads, each with its own PostgreSQL connection, released together by a
barrier for every trial.
"""

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connections
from django.utils import timezone

from approvals import services
from approvals.lib.hashing import args_hash
from approvals.models import Decision, Message, PolicyRule, Run, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ARGUMENTS = {"order_id": "A-1001", "amount": 40.0, "reason": "Item arrived damaged"}
STATUS_OF = {"approve": ToolCall.Status.APPROVED, "reject": ToolCall.Status.REJECTED, "expire": ToolCall.Status.EXPIRED}


def overdue_calls(run: Run, count: int, required_approvals: int = 1) -> list[ToolCall]:
    """Pending refunds, one per assistant step, all past their deadline."""
    messages = Message.objects.bulk_create(
        Message(run=run, seq=seq, role="assistant", content="Refund it.", tool_calls=[{"id": f"c{seq}"}])
        for seq in range(1, count + 1)
    )
    past = timezone.now() - timedelta(seconds=1)
    return ToolCall.objects.bulk_create(
        ToolCall(
            run=run,
            message=message,
            call_id=f"c{message.seq}",
            tool_name="issue_refund",
            tier="approval",
            status=ToolCall.Status.PENDING,
            arguments=ARGUMENTS,
            arguments_hash=args_hash(ARGUMENTS),
            required_approvals=required_approvals,
            expires_at=past,
        )
        for message in messages
    )


def race(racers: dict, call_ids: list[int]) -> dict[str, list]:
    """Run each racer on each call, all racers of a trial released at once; returns what each got."""
    barrier = threading.Barrier(len(racers), timeout=30)
    results = {name: [] for name in racers}

    def loop(name, attempt):
        try:
            for call_id in call_ids:
                barrier.wait()
                try:
                    results[name].append(attempt(call_id))
                except services.DecisionError as exc:
                    results[name].append(exc)
        except threading.BrokenBarrierError:
            pass
        except BaseException:
            barrier.abort()
            raise
        finally:
            connections.close_all()

    threads = [threading.Thread(target=loop, args=item) for item in racers.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(got) == len(call_ids) for got in results.values()), "a racer stopped early"
    return results


def test_approve_reject_and_expiry_racing_end_in_exactly_one_final_state(
    require_postgres, shop, reviewer, reviewer2, requester
):
    trials = 200
    run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
    calls = overdue_calls(run, trials)
    started = time.monotonic()
    results = race(
        {
            "approve": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=reviewer, verdict="approve", shown_hash=args_hash(ARGUMENTS)
            ),
            "reject": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=reviewer2, verdict="reject", shown_hash=args_hash(ARGUMENTS), reason="no"
            ),
            "expire": lambda pk: services.toolcall_expire(call_id=pk, now=timezone.now()),
        },
        [c.pk for c in calls],
    )
    elapsed = time.monotonic() - started
    winners = Counter()
    for i, call in enumerate(calls):
        call.refresh_from_db()
        got = {name: results[name][i] for name in results}
        won = [name for name, value in got.items() if isinstance(value, Decision)]
        assert len(won) == 1, f"trial {i}: {got}"
        winner = won[0]
        winners[winner] += 1
        finals = list(Decision.objects.filter(tool_call=call, final=True))
        assert len(finals) == 1 and Decision.objects.filter(tool_call=call).count() == 1
        assert finals[0].verdict == winner
        assert call.status == STATUS_OF[winner]
        for name, value in got.items():
            if name != winner:
                assert value is None if name == "expire" else isinstance(value, services.AlreadyDecided), (
                    f"trial {i}: {got}"
                )
        outputs = run.messages.filter(role="tool", tool_call_id=call.call_id).count()
        assert outputs == (0 if winner == "approve" else 1)
    print(f"\n{trials} races in {elapsed:.1f} s; winners: {dict(winners)}")
    assert sum(winners.values()) == trials


def test_two_approvals_and_a_reject_racing_on_a_two_of_two_call_end_in_one_final_state(
    require_postgres, shop, reviewer, reviewer2, requester, django_user_model
):
    carol = django_user_model.objects.create_user(username="carol", password="pw")
    carol.groups.add(Group.objects.get(name="reviewers"))
    PolicyRule.objects.create(
        name="two", tool_name="issue_refund", operator="any", outcome="review", required_approvals=2
    )
    trials = 50
    run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
    calls = overdue_calls(run, trials, required_approvals=2)
    shown = args_hash(ARGUMENTS)
    race(
        {
            "alice": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=reviewer, verdict="approve", shown_hash=shown
            ),
            "bob": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=reviewer2, verdict="approve", shown_hash=shown
            ),
            "carol": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=carol, verdict="reject", shown_hash=shown, reason="no"
            ),
        },
        [c.pk for c in calls],
    )
    for call in calls:
        call.refresh_from_db()
        decisions = list(Decision.objects.filter(tool_call=call).order_by("id"))
        finals = [d for d in decisions if d.final]
        assert len(finals) == 1
        if call.status == ToolCall.Status.APPROVED:
            assert [d.verdict for d in decisions] == ["approve", "approve"]
            assert {d.reviewer for d in decisions} == {reviewer, reviewer2} and finals[0] == decisions[-1]
        else:
            assert call.status == ToolCall.Status.REJECTED
            assert finals[0].verdict == "reject" and decisions[-1] == finals[0]
            assert len(decisions) <= 2
