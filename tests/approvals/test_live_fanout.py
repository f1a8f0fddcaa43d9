"""One render per distinct view of a call, for all the sockets of a process."""

import pytest

from approvals import access
from approvals.live import fanout
from tests.stack import end_backend_of

pytestmark = pytest.mark.django_db

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}


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


@pytest.mark.django_db(transaction=True)
def test_push_jobs_keep_one_database_connection_and_replace_a_broken_one(require_postgres, call, reviewer, settings):
    import threading

    from asgiref.sync import async_to_sync
    from django.db.backends.signals import connection_created

    settings.PUSH_CONN_MAX_AGE = 300
    opened = []

    def created(sender, connection, **kwargs):
        if threading.current_thread().name.startswith("live-push"):
            opened.append(connection)

    connection_created.connect(created, weak=False, dispatch_uid="push-test")
    try:
        for _ in range(3):
            assert reviewer.pk in async_to_sync(fanout._run_job)([call.pk], [reviewer.pk])[call.pk]
        assert len(opened) == 1  # one connection for three pushes (with a web process's CONN_MAX_AGE 0: three)

        end_backend_of(opened[0])  # the database drops the push thread's connection while it is idle
        assert reviewer.pk in async_to_sync(fanout._run_job)([call.pk], [reviewer.pk])[call.pk]
        assert len(opened) == 2  # checked before reuse, and replaced
    finally:
        connection_created.disconnect(dispatch_uid="push-test")
        fanout.close_push_connection()


@pytest.mark.django_db(transaction=True)
def test_a_push_job_for_many_remote_calls_costs_the_queries_of_one(require_postgres, reviewer, reviewer2):
    """Their tools (the agents' declarations), their decisions and who wants a browser notification are read for
    all the job's calls together, not call by call."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.agentapi import AgentClient, proposed_in_threads

    agent = AgentClient("fanout-bot")
    agent.declare()
    ids = proposed_in_threads(agent, 8)
    users = [reviewer.pk, reviewer2.pk]
    fanout.calls_messages(ids[:1], users)  # what a process reads once (the declarations' adapters, the users)
    counts = []
    for calls in (ids[:1], ids):
        with CaptureQueriesContext(connection) as queries:
            pushed = fanout.calls_messages(calls, users)
        assert all(set(pushed[call_id]) == set(users) for call_id in calls)
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
