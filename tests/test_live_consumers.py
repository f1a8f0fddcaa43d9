"""The live sockets, through the real ASGI application (origin check, session login)."""

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.db import connections

from approvals import access
from approvals.models import PolicyRule, ToolSetting
from reviewhub.asgi import application

from . import reviewing
from .livestack import session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}
EMAIL = {"to": "dana.smith@example.com", "subject": "Your order", "body": "It has shipped."}


@pytest_asyncio.fixture(autouse=True)
async def _close_connections():
    yield
    # Async ORM work ran in asgiref's thread: close its connections there.
    await sync_to_async(connections.close_all)()


propose = sync_to_async(reviewing.propose)
approve = sync_to_async(reviewing.decide)


async def socket(path, user=None, origin="http://testserver"):
    headers = [(b"host", b"testserver")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if user is not None:
        headers.append((b"cookie", (await sync_to_async(session_cookie)(user)).encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def refused(path, user=None, **kwargs):
    ok, code = await (await socket(path, user, **kwargs)).connect()
    return not ok


async def connected(path, user):
    communicator = await socket(path, user)
    ok, code = await communicator.connect()
    assert ok, f"refused with {code}"
    return communicator


async def test_an_anonymous_socket_is_refused():
    assert await refused("/ws/queue/")
    assert await refused("/ws/runs/1/")


async def test_a_socket_from_a_foreign_origin_is_refused(reviewer):
    assert await refused("/ws/queue/", reviewer, origin="http://evil.example")
    assert await refused("/ws/queue/", reviewer, origin=None)
    await (await connected("/ws/queue/", reviewer)).disconnect()  # the same reviewer, from this site


async def test_a_user_who_is_not_a_reviewer_is_refused(outsider):
    ok, code = await (await socket("/ws/queue/", outsider)).connect()
    assert (ok, code) == (False, 4403)


async def test_a_reviewer_receives_a_call_when_it_is_proposed(run, reviewer):
    alice = await connected("/ws/queue/", reviewer)

    call = await propose(run, "issue_refund", REFUND, "call_1")

    message = await alice.receive_json_from(timeout=3)
    assert message["type"] == "call" and message["id"] == call.pk
    assert message["pending"] is True and message["can_decide"] is True
    assert message["count"] == 1
    assert f'id="call-{call.pk}"' in message["html"] and '/approve/"' in message["html"]
    assert "Refund $45.00" in message["description"]
    await alice.disconnect()


async def test_every_reviewer_receives_the_outcome_when_a_call_is_decided(run, reviewer, reviewer2):
    call = await propose(run, "issue_refund", REFUND, "call_1")
    alice = await connected("/ws/queue/", reviewer)
    bob = await connected("/ws/queue/", reviewer2)

    await approve(call, reviewer2)

    for communicator, mine in ((alice, False), (bob, True)):
        message = await communicator.receive_json_from(timeout=3)
        assert (message["id"], message["pending"], message["count"]) == (call.pk, False, 0)
        assert message["outcome"] == "Approved by bob" and message["mine"] is mine
        assert "Approved by <strong>bob</strong>" in message["html"]
        assert '/approve/"' not in message["html"]
        await communicator.disconnect()


async def test_a_reviewer_receives_nothing_for_calls_it_may_not_decide(run, reviewer, reviewer2, monkeypatch):
    # A rule of the kind the access functions hold: the mail desk reviews emails only.
    await sync_to_async(lambda: reviewer2.groups.add(Group.objects.create(name="mail desk")))()
    visible_calls = access.visible_calls

    def mail_desk_sees_emails_only(user, queryset=None):
        calls = visible_calls(user, queryset)
        return calls.filter(tool_name="send_email") if user.groups.filter(name="mail desk").exists() else calls

    monkeypatch.setattr(access, "visible_calls", mail_desk_sees_emails_only)
    alice = await connected("/ws/queue/", reviewer)
    bob = await connected("/ws/queue/", reviewer2)

    refund = await propose(run, "issue_refund", REFUND, "call_1")
    assert (await alice.receive_json_from(timeout=3))["id"] == refund.pk
    assert await bob.receive_nothing(timeout=0.3)

    await approve(refund, reviewer)
    assert (await alice.receive_json_from(timeout=3))["pending"] is False
    assert await bob.receive_nothing(timeout=0.3)

    email = await propose(run, "send_email", EMAIL, "call_2")
    message = await bob.receive_json_from(timeout=3)
    assert (message["id"], message["count"]) == (email.pk, 1)
    await alice.disconnect()
    await bob.disconnect()


async def test_only_the_group_a_tool_belongs_to_receives_its_calls(run, reviewer, reviewer2):
    @sync_to_async
    def refunds_for_senior_only():
        senior = Group.objects.get(name="senior")
        reviewer.groups.add(senior)
        ToolSetting.objects.create(tool_name="issue_refund", group=senior)

    await refunds_for_senior_only()
    alice = await connected("/ws/queue/", reviewer)
    bob = await connected("/ws/queue/", reviewer2)

    refund = await propose(run, "issue_refund", REFUND, "call_1")

    message = await alice.receive_json_from(timeout=3)
    assert (message["id"], message["can_decide"]) == (refund.pk, True)
    assert await bob.receive_nothing(timeout=0.3)
    await alice.disconnect()
    await bob.disconnect()


async def test_after_the_first_of_two_approvals_each_reviewer_sees_where_they_stand(run, reviewer, reviewer2):
    await sync_to_async(PolicyRule.objects.create)(
        name="two for refunds", tool_name="issue_refund", outcome=PolicyRule.Outcome.REVIEW, required_approvals=2
    )
    call = await propose(run, "issue_refund", REFUND, "call_1")
    alice = await connected("/ws/queue/", reviewer)
    bob = await connected("/ws/queue/", reviewer2)

    await approve(call, reviewer)

    mine, theirs = await alice.receive_json_from(timeout=3), await bob.receive_json_from(timeout=3)
    assert mine["pending"] is theirs["pending"] is True
    assert mine["can_decide"] is False and "You already approved this call" in mine["html"]
    assert theirs["can_decide"] is True and '/approve/"' in theirs["html"]
    assert "1 of 2 approvals: alice" in theirs["html"]
    await alice.disconnect()
    await bob.disconnect()


async def test_the_requester_receives_its_runs_call_without_the_buttons(run, requester):
    rita = await connected("/ws/queue/", requester)

    await propose(run, "issue_refund", REFUND, "call_1")

    message = await rita.receive_json_from(timeout=3)
    assert message["can_decide"] is False
    assert "You requested this run" in message["html"] and '/approve/"' not in message["html"]
    await rita.disconnect()


async def test_the_run_socket_says_when_its_run_changes(run, reviewer):
    watcher = await connected(f"/ws/runs/{run.pk}/", reviewer)
    other = await connected(f"/ws/runs/{run.pk + 1}/", reviewer)

    await propose(run, "issue_refund", REFUND, "call_1")

    assert await watcher.receive_json_from(timeout=3) == {"type": "run", "id": run.pk}
    assert await other.receive_nothing(timeout=0.2)
    await watcher.disconnect()
    await other.disconnect()
