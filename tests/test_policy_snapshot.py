"""Policy read once per change (approvals/policy/snapshot.py): a change is seen by the very next evaluation,
in this process or any other, a change rolled back is never kept, and no change costs one small read."""

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from approvals import policy
from approvals.models import PolicyRule, ToolSetting, TurnRule
from approvals.policy import snapshot as policy_snapshot
from approvals.policy import turn_rules as turns
from approvals.tools import registry

refund = registry.get("issue_refund")
ARGS = {"order_id": "A-1001", "amount": 500, "reason": "damaged"}  # above the demo rule's 20
FORBID_ALL = {"name": "no refunds", "tool_name": "issue_refund", "outcome": "forbid", "order": 1}


def in_another_thread(work) -> None:
    """Run `work` on a connection of its own and commit it, as another process would (never reading policy)."""

    def target():
        try:
            with transaction.atomic():
                work()
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)


@pytest.mark.django_db
def test_unchanged_policy_costs_one_small_read_and_a_change_is_seen_by_the_next_evaluation():
    policy.evaluate(refund, ARGS)
    with CaptureQueriesContext(connection) as unchanged:
        assert policy.evaluate(refund, ARGS).action == policy.REVIEW
    assert [q["sql"] for q in unchanged.captured_queries] == ["SELECT stamp FROM approvals_policystamp WHERE id = 1"]
    PolicyRule.objects.create(**FORBID_ALL)
    assert policy.evaluate(refund, ARGS).action == policy.FORBID


@pytest.mark.django_db
def test_a_change_rolled_back_is_not_kept_in_the_snapshot():
    with pytest.raises(RuntimeError), transaction.atomic():
        PolicyRule.objects.create(**FORBID_ALL)
        assert policy.evaluate(refund, ARGS).action == policy.FORBID  # read inside the transaction
        raise RuntimeError("the admin's save failed")
    assert policy.evaluate(refund, ARGS).action == policy.REVIEW


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_elsewhere_is_seen_here():
    assert policy.evaluate(refund, ARGS).action == policy.REVIEW
    in_another_thread(lambda: PolicyRule.objects.create(**FORBID_ALL))
    assert policy.evaluate(refund, ARGS).action == policy.FORBID
    in_another_thread(lambda: PolicyRule.objects.filter(name="no refunds").get().delete())
    assert policy.evaluate(refund, ARGS).action == policy.REVIEW


@pytest.mark.django_db(transaction=True)
def test_a_tool_setting_and_a_group_renamed_elsewhere_are_seen_here():
    group = Group.objects.create(name="finance")
    assert policy_snapshot.tool_setting("issue_refund").group is None
    in_another_thread(lambda: ToolSetting.objects.create(tool_name="issue_refund", group=group))
    assert policy_snapshot.tool_setting("issue_refund").group.name == "finance"

    def rename():
        renamed = Group.objects.get(pk=group.pk)
        renamed.name = "refunds desk"
        renamed.save()

    in_another_thread(rename)
    assert policy.evaluate(refund, ARGS).group_name == "refunds desk"


@pytest.mark.django_db
def test_turn_rules_come_from_the_snapshot_and_read_last_reuses_only_a_fresh_read(monkeypatch):
    assert turns.enabled_rules() == []
    TurnRule.objects.create(name="every turn", every_turn=True)
    assert [r.name for r in turns.enabled_rules()] == ["every turn"]
    with CaptureQueriesContext(connection) as reused:
        assert [r.name for r in turns.enabled_rules(fresh=False)] == ["every turn"]
    assert reused.captured_queries == []  # read a moment ago, by this thread
    monkeypatch.setattr(policy_snapshot, "REUSE_SECONDS", 0)
    TurnRule.objects.all().delete()  # one by one: each sends its signal
    assert turns.enabled_rules(fresh=False) == []


@pytest.mark.django_db
def test_a_database_emptied_by_hand_gets_a_new_stamp():
    policy.evaluate(refund, ARGS)
    connection.cursor().execute("DELETE FROM approvals_policystamp")
    PolicyRule.objects.bulk_create([PolicyRule(**FORBID_ALL)])  # no signal: but the emptied stamp is read anew
    assert policy.evaluate(refund, ARGS).action == policy.FORBID
