"""The live sockets, through the real ASGI application (origin check, session login)."""

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group

from approvals import access, services
from approvals.models import Message, PolicyRule, Run, ToolSetting
from reviewhub.asgi import application
from tests import reviewing
from tests.livestack import parse_push, session_cookie

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("async_connections_closed"),
]

REFUND = {"order_id": "A-1001", "amount": 45, "reason": "Item arrived damaged"}
EMAIL = {"to": "dana.smith@example.com", "subject": "Your order", "body": "It has shipped."}


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


async def receive(communicator) -> dict:
    return parse_push(await communicator.receive_from(timeout=3))


OUT_OF_BAND = ["true", "beforeend:#live-queue", "beforeend:#toasts"]  # the count, the row, the toast


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

    push = await receive(alice)
    assert push["oob"] == OUT_OF_BAND
    assert push["id"] == call.pk and push["pending"] is True and push["can_decide"] is True
    assert push["count"] == 1
    assert f'id="row-{call.pk}"' in push["html"] and "Refund $45.00" in push["html"]
    assert '/approve/"' not in push["html"] and len(push["html"].encode()) < 2500  # the row, not the whole card
    assert push["toast"].startswith("New call to review: Refund $45.00")
    await alice.disconnect()


async def test_every_reviewer_receives_the_outcome_when_a_call_is_decided(run, reviewer, reviewer2):
    call = await propose(run, "issue_refund", REFUND, "call_1")
    alice = await connected("/ws/queue/", reviewer)
    bob = await connected("/ws/queue/", reviewer2)

    await approve(call, reviewer2)

    for communicator, mine in ((alice, False), (bob, True)):
        push = await receive(communicator)
        assert push["oob"] == OUT_OF_BAND
        assert (push["id"], push["pending"], push["count"]) == (call.pk, False, 0)
        assert push["toast"].startswith("Approved by bob: Refund $45.00") and push["mine"] is mine
        assert "Approved by <strong>bob</strong>" in push["html"]
        assert '/approve/"' not in push["html"]
        await communicator.disconnect()


async def test_calls_proposed_while_a_push_is_worked_out_are_worked_out_together(run, reviewer, monkeypatch):
    """A job per hint made a hundred proposals' pushes wait, one job after another, for each other's queries."""
    from approvals.live import fanout

    jobs, first_started, go_on = [], threading.Event(), threading.Event()
    calls_messages = fanout.calls_messages

    def first_job_held(call_ids, user_ids):
        jobs.append(list(call_ids))
        if len(jobs) == 1:
            first_started.set()
            go_on.wait(30)
        return calls_messages(call_ids, user_ids)

    monkeypatch.setattr(fanout, "calls_messages", first_job_held)
    alice = await connected("/ws/queue/", reviewer)
    first = await propose(run, "issue_refund", REFUND, "call_1")
    assert await asyncio.to_thread(first_started.wait, 30)
    later = [await propose(run, "issue_refund", REFUND | {"amount": 40 + i}, f"call_{i}") for i in range(2, 6)]
    await until(lambda: fanout._listener["hints"].qsize() == len(later))
    go_on.set()

    assert [(await receive(alice))["id"] for _ in range(5)] == [first.pk] + [call.pk for call in later]
    assert jobs == [[first.pk], [call.pk for call in later]]  # the four that waited: one job
    await alice.disconnect()


async def until(condition, seconds: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not within the ceiling"
        await asyncio.sleep(0.01)


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
    assert (await receive(alice))["id"] == refund.pk
    await approve(refund, reviewer)
    assert (await receive(alice))["pending"] is False
    email = await propose(run, "send_email", EMAIL, "call_2")

    # Pushes reach a socket in the order of their hints: had Bob been sent the
    # refund's proposal or its outcome, he would have received it before this.
    push = await receive(bob)
    assert (push["id"], push["count"]) == (email.pk, 1)
    assert (await receive(alice))["id"] == email.pk
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
    push = await receive(alice)
    assert (push["id"], push["can_decide"]) == (refund.pk, True)
    email = await propose(run, "send_email", EMAIL, "call_2")

    assert (await receive(bob))["id"] == email.pk  # the first Bob hears of: never the refund before it
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

    mine, theirs = await receive(alice), await receive(bob)
    assert mine["pending"] is theirs["pending"] is True
    assert mine["can_decide"] is False
    assert mine["toast"] is None  # a toast announces only a call one may decide
    assert theirs["can_decide"] is True
    await alice.disconnect()
    await bob.disconnect()


async def test_the_requester_receives_its_runs_call_without_the_buttons(run, requester):
    rita = await connected("/ws/queue/", requester)

    await propose(run, "issue_refund", REFUND, "call_1")

    push = await receive(rita)
    assert push["can_decide"] is False and push["toast"] is None
    assert '/approve/"' not in push["html"]
    await rita.disconnect()


async def test_a_push_is_escaped_like_the_page(run, reviewer):
    alice = await connected("/ws/queue/", reviewer)

    await propose(run, "send_email", EMAIL | {"subject": "<script>alert(1)</script>"}, "call_1")  # a key field

    html = (await receive(alice))["html"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    await alice.disconnect()


async def test_the_run_socket_says_when_its_run_changes(run, reviewer):
    other_run = await sync_to_async(Run.objects.create)(agent="support", request="Another.", requested_by=reviewer)
    watcher = await connected(f"/ws/runs/{run.pk}/", reviewer)
    other = await connected(f"/ws/runs/{other_run.pk}/", reviewer)

    await propose(run, "issue_refund", REFUND, "call_1")
    changed = await watcher.receive_from(timeout=3)
    await sync_to_async(services.message_append)(run=other_run, role=Message.Role.USER, content=other_run.request)

    assert 'id="run-changed" hx-swap-oob="true"' in changed and f'hx-get="/runs/{run.pk}/?fragment=body"' in changed
    # The first push the other run's socket receives is its own run's: never the first run's before it.
    assert f'hx-get="/runs/{other_run.pk}/?fragment=body"' in await other.receive_from(timeout=3)
    await watcher.disconnect()
    await other.disconnect()
