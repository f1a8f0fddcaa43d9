"""One render per distinct view of a call, for all the sockets of a process."""

import pytest

from approvals import access, fanout

from .reviewing import propose

pytestmark = pytest.mark.django_db

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}


@pytest.fixture
def call(run):
    return propose(run, "issue_refund", REFUND)


def test_the_panel_is_rendered_once_per_distinct_view(call, reviewer, reviewer2, requester, outsider, monkeypatch):
    renders = []
    real_render = fanout.render_to_string
    monkeypatch.setattr(fanout, "render_to_string", lambda *a, **k: renders.append(a) or real_render(*a, **k))

    messages = fanout.call_messages(call.pk, [reviewer.pk, reviewer2.pk, requester.pk, outsider.pk])

    assert set(messages) == {reviewer.pk, reviewer2.pk, requester.pk}  # the outsider may not see it
    assert len(renders) == 2  # one for the two who may decide, one for the requester
    assert messages[reviewer.pk] == messages[reviewer2.pk]
    assert 'data-can-decide="1"' in messages[reviewer.pk] and 'data-can-decide="0"' in messages[requester.pk]


def test_who_sees_a_call_depends_on_groups_and_permissions_not_on_who_one_is(call, reviewer, requester):
    """fanout asks visible_calls() once per permission group: this must hold for that."""
    assert fanout._permission_group(reviewer) == fanout._permission_group(requester)
    seen_by = [set(access.visible_calls(user).values_list("pk", flat=True)) for user in (reviewer, requester)]
    assert seen_by[0] == seen_by[1] == {call.pk}  # requester requested the run; the rule for deciding is can_decide's
