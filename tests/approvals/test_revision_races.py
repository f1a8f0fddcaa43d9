"""Two reviewers deciding a round-2 call at once end in one outcome, and the next proposal links to what won.

Real threads, each with its own PostgreSQL connection, released together by a barrier (tests/approvals/test_races.py).
"""

from collections import Counter

import pytest

from approvals import services
from approvals.models import Decision, Run, ToolCall
from tests.reviewing import decide, propose

from .test_races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}


def round_2_call(requester, first_reviewer) -> ToolCall:
    """A run whose refund a reviewer rejected and whose model proposed it again: the pending round 2."""
    run = Run.objects.create(agent="support", request="race", requested_by=requester, status=Run.Status.WAITING)
    first = propose(run, "issue_refund", REFUND, call_id="c1")
    decide(first, first_reviewer, "reject", reason="Too much")
    second = propose(run, "issue_refund", REFUND | {"amount": 40}, call_id="c2")
    assert (second.revision, second.revision_of_id, second.status) == (2, first.pk, ToolCall.Status.PENDING)
    return second


def decide_at_once(call_ids: list[int], alice, bob) -> dict[str, list]:
    """Alice approves and Bob responds to each call, both released at once."""

    def shown(pk: int) -> str:
        return ToolCall.objects.get(pk=pk).review_hash

    return race(
        {
            "approve": lambda pk: services.toolcall_decide(
                call_id=pk, reviewer=alice, verdict="approve", shown_hash=shown(pk)
            ),
            "respond": lambda pk: services.toolcall_respond(
                call_id=pk, reviewer=bob, shown_hash=shown(pk), reason="Still too much", guidance="Refund $35"
            ),
        },
        call_ids,
    )


def test_two_reviewers_deciding_a_round_2_call_at_once_end_in_one_outcome(
    require_postgres, shop, reviewer, reviewer2, requester, senior
):
    trials = 40
    calls = [round_2_call(requester, senior) for _ in range(trials)]
    results = decide_at_once([c.pk for c in calls], reviewer, reviewer2)
    winners = Counter()
    for i, call in enumerate(calls):
        call.refresh_from_db()
        got = {name: results[name][i] for name in results}
        won = [name for name, value in got.items() if isinstance(value, Decision)]
        assert len(won) == 1, f"trial {i}: {got}"
        lost = next(name for name in got if name != won[0])
        assert isinstance(got[lost], services.AlreadyDecided), f"trial {i}: {got}"
        winners[won[0]] += 1
        verdict, status = ("approve", "approved") if won[0] == "approve" else ("reject", "rejected")
        assert list(Decision.objects.filter(tool_call=call).values_list("verdict", flat=True)) == [verdict]
        assert call.status == status and call.revision == 2  # a decision never changes which round a call is

        following = propose(call.run, "issue_refund", REFUND | {"amount": 35}, call_id="c3")
        expected = (3, call.pk) if won[0] == "respond" else (1, None)
        assert (following.revision, following.revision_of_id) == expected, f"trial {i}: {got}"
    print(f"\n{trials} races on round-2 calls; winners: {dict(winners)}")
    assert sum(winners.values()) == trials
