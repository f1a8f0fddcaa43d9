"""Long-polls: GET /api/v1/calls/{id}?wait= returns the moment a decision commits, whoever makes it."""

import asyncio
import contextlib
import json
import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals import services
from approvals.models import ToolCall
from remote import api, waiting
from remote.models import RemoteCall
from tests.agentapi import PROPOSAL, AgentClient
from tests.settings import reachable
from tests.waiting import wait_for


def _poll_in_thread(token: str, call_id: int, answers: list) -> threading.Thread:
    def poll():
        try:
            client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
            answers.append(client.get(f"/api/v1/calls/{call_id}?wait=60").json())
        finally:
            connections.close_all()

    thread = threading.Thread(target=poll)
    thread.start()
    return thread


@pytest.fixture
def poller(roles) -> AgentClient:
    """An agent that has declared its refund tool (tier approval)."""
    agent = AgentClient("poller")
    agent.declare()
    return agent


@pytest.fixture
def proposed(poller, django_user_model):
    """An agent, a reviewer, and the agent's call waiting for review: (agent, reviewer, call)."""
    agent = poller
    reviewer = django_user_model.objects.create_user("alice")
    reviewer.groups.add(*Group.objects.filter(name="reviewers"))
    return agent, reviewer, ToolCall.objects.get(pk=agent.propose()["id"])


def _waiting_poll(agent, call) -> tuple[list, threading.Thread]:
    """A long-poll of 60 s on the call, once it waits: (the answers it got, its thread)."""
    answers: list = []
    thread = _poll_in_thread(agent.token, call.pk, answers)
    assert wait_for(lambda: call.pk in waiting._waiters), "the long-poll never started waiting"
    return answers, thread


@pytest.fixture
def polled(proposed, settings):
    """A reviewer, and a pending call whose agent is waiting on it in a long-poll of 60 s: (reviewer, call,
    the answers the poll got, its thread)."""
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 120  # longer than the wait: only the wake-up can end it early
    agent, reviewer, call = proposed
    return reviewer, call, *_waiting_poll(agent, call)


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_returns_when_a_reviewer_decides(polled):
    reviewer, call, answers, thread = polled
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(90)

    assert answers and answers[0]["status"] == "approved"
    assert answers[0]["decision"]["reviewer"] == "alice"
    assert call.pk not in waiting._waiters


def test_a_decision_wakes_its_long_polls_as_it_commits_before_any_other_statement(
    proposed, django_capture_on_commit_callbacks, monkeypatch
):
    """The wake-up's call ids are read inside the decision's transaction (the remote advancer's outbox): after the
    commit the deciding process, maybe a busy one, publishes at once (before, it read them first)."""
    agent, reviewer, call = proposed
    woken: list[tuple[list[int], int]] = []
    with django_capture_on_commit_callbacks() as after_commit:
        services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    with CaptureQueriesContext(connection) as statements:
        monkeypatch.setattr(waiting, "wake", lambda call_ids, answers: woken.append((call_ids, len(statements))))
        for callback in after_commit:
            callback()

    assert woken == [([call.pk], 0)]


@pytest.fixture
def reads(monkeypatch) -> list[int]:
    """The ids of the calls the API reads for its answers, one entry a read."""
    seen: list[int] = []
    reread = api._reread
    monkeypatch.setattr(api, "_reread", lambda request, call_id: seen.append(call_id) or reread(request, call_id))
    return seen


@pytest.mark.django_db(transaction=True)
def test_a_woken_long_poll_answers_what_the_decision_told_without_reading_and_a_get_agrees(proposed, reads, polled):
    """The decision's wake-up carries its call as the commit left it (remote/resume.outbox): the long-poll read
    its call once, when it started, and never again; what it answers is what a GET reads after the commit."""
    agent = proposed[0]
    reviewer, call, answers, thread = polled
    edited = {**call.arguments, "amount": 45}
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="edit", shown_hash=call.review_hash, arguments=edited
    )
    thread.join(90)

    assert answers and reads == [call.pk]
    told = answers[0]
    assert told["status"] == "approved" and told["decision"]["arguments"] == edited
    assert told["decision"]["changes"] == [{"field": "amount", "before": 490, "after": 45}]
    assert told == agent.get(f"/calls/{call.pk}").json()  # execution key, url, reviewer, times: all the same


@pytest.mark.django_db(transaction=True)
def test_a_wake_up_telling_another_agents_call_is_never_answered_to_an_agent_that_may_not_see_it(proposed, monkeypatch):
    """The told answer goes to the long-polls waiting on that call id in the process: one of an agent that may not
    see the call is refused by its first read (a 404, as if it did not exist), wake-up or not."""
    call = proposed[2]
    stranger = AgentClient("stranger")
    reread = api._reread

    def woken_meanwhile(request, call_id):  # the decision's wake-up lands while this read runs
        waiting._wake_here([call_id], {str(call_id): {"status": "approved", "arguments": call.arguments}})
        return reread(request, call_id)

    monkeypatch.setattr(api, "_reread", woken_meanwhile)
    answer = stranger.get(f"/calls/{call.pk}?wait=5")

    assert answer.status_code == 404 and "arguments" not in answer.json()


@pytest.mark.django_db(transaction=True)
def test_a_told_approval_is_noted_as_read_by_its_agent(polled):
    """A long-poll answered from the wake-up still notes the agent's read of the approval (remote/unclaimed.py):
    an agent that reads it and never claims is flagged."""
    reviewer, call, answers, thread = polled
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(90)

    assert answers and answers[0]["status"] == "approved"
    assert RemoteCall.objects.get(pk=call.pk).approval_read_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_told_rejection_is_not_noted_as_a_read_approval(polled):
    reviewer, call, answers, thread = polled
    services.toolcall_decide(
        call_id=call.pk, reviewer=reviewer, verdict="reject", shown_hash=call.review_hash, reason="too much"
    )
    thread.join(90)

    assert answers and answers[0]["status"] == "rejected" and answers[0]["decision"]["reason"] == "too much"
    assert RemoteCall.objects.get(pk=call.pk).approval_read_at is None


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_returns_when_the_run_is_cancelled(polled):
    reviewer, call, answers, thread = polled
    services.run_cancel(run=call.run, user=reviewer)
    thread.join(30)  # the poll waits 60 s: only the wake-up ends it within this ceiling

    assert answers and answers[0]["status"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_of_a_call_already_decided_returns_at_once(roles, django_user_model, settings):
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 120
    agent = AgentClient("poller")
    agent.declare(tier="read_only")
    call = agent.propose()

    answer = agent.get(f"/calls/{call['id']}?wait=60").json()

    assert answer["status"] == "approved"


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_that_times_out_returns_the_pending_call(poller):
    call = poller.propose()

    answer = poller.get(f"/calls/{call['id']}?wait=0.2").json()

    assert answer["status"] == "pending" and answer["decision"] is None


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_that_times_out_reads_its_call_when_it_starts_and_once_more_to_answer(poller, monkeypatch):
    call = poller.propose()
    reads: list[int] = []
    reread = api._reread
    monkeypatch.setattr(api, "_reread", lambda request, call_id: reads.append(call_id) or reread(request, call_id))

    answer = poller.get(f"/calls/{call['id']}?wait=0.2").json()

    assert answer["status"] == "pending" and reads == [call["id"], call["id"]]


@pytest.fixture
def redis_polled(proposed, settings):
    """As `polled`, with REDIS_URL set: the poll's process hears of decisions through Redis, its listener
    subscribed (a reviewer, the call, the answers the poll got, its thread)."""
    if not reachable("127.0.0.1", 6379):
        pytest.skip("Redis is not reachable on 127.0.0.1:6379: this test needs it.")
    settings.REDIS_URL = settings.REDIS_TEST_URL
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 120  # longer than the wait: only a wake-up can end it early
    agent, reviewer, call = proposed
    answers, thread = _waiting_poll(agent, call)
    assert wait_for(lambda: waiting._listeners)
    assert wait_for(lambda: _subscribed(settings.REDIS_TEST_URL)), "the listener never subscribed"
    return reviewer, call, answers, thread


@pytest.mark.django_db(transaction=True)
def test_with_redis_a_decision_wakes_the_long_poll_through_pub_sub(redis_polled, monkeypatch):
    reviewer, call, answers, thread = redis_polled
    published = []
    original = waiting._wake_here

    def heard(call_ids, answers=None):  # what the listener hears from Redis
        published.append((list(call_ids), answers))
        original(call_ids, answers)

    monkeypatch.setattr(waiting, "_wake_here", heard)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(90)

    assert answers and answers[0]["status"] == "approved"
    # it came through Redis, not from this process directly, with the call as the decision left it
    told = [answers for ids, answers in published if call.pk in ids]
    assert told and told[0][str(call.pk)]["status"] == "approved"


@pytest.mark.django_db(transaction=True)
def test_with_redis_a_call_too_large_to_tell_is_woken_by_its_id_and_read(reads, redis_polled, monkeypatch):
    reviewer, call, answers, thread = redis_polled
    monkeypatch.setattr(waiting, "TOLD_AT_MOST", 200)  # the message telling this refund is 761 bytes
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(30)  # the poll waits 60 s and the re-check 120: only the wake-up ends it within this ceiling

    assert answers and answers[0]["status"] == "approved"
    assert reads == [call.pk, call.pk]  # when it started, and once woken: it was not told


@pytest.mark.django_db(transaction=True)
def test_with_redis_a_wake_up_as_the_version_before_published_it_still_wakes(redis_polled, settings):
    """A bare list of ids, as a process not yet upgraded publishes it in a rolling deploy: the listener wakes the
    long-poll, which reads its call (without it the listener died, and the poll waited for the re-check)."""
    import redis

    reviewer, call, answers, thread = redis_polled
    ToolCall.objects.filter(pk=call.pk).update(status=ToolCall.Status.CANCELLED)  # changed with no wake-up
    with redis.Redis.from_url(settings.REDIS_TEST_URL) as client:
        client.publish(waiting.CHANNEL, json.dumps([call.pk]))
    thread.join(30)  # the poll waits 60 s and the re-check 120: only that message ends it within this ceiling

    assert answers and answers[0]["status"] == "cancelled"


def _subscribed(url: str) -> bool:
    import redis

    return bool(redis.Redis.from_url(url).pubsub_numsub(waiting.CHANNEL)[0][1])


def _connections_to_this_database() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "select count(*) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_waiting_long_poll_holds_no_database_connection(require_postgres, proposed, settings):
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 120
    agent, reviewer, call = proposed
    answers, thread = _waiting_poll(agent, call)
    released = wait_for(lambda: _connections_to_this_database() == 0)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(90)

    assert released, "the waiting long-poll kept its database connection open"
    assert answers and answers[0]["status"] == "approved"


@pytest.mark.django_db(transaction=True)
def test_a_lost_wake_up_is_made_good_by_the_process_recheck(proposed, settings, monkeypatch):
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 0.3
    monkeypatch.setattr(waiting, "wake", lambda call_ids, answers=None: None)  # no decision wakes anyone
    agent, reviewer, call = proposed
    answers, thread = _waiting_poll(agent, call)
    services.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash)
    thread.join(30)  # the poll waits 60 s: only the re-check ends it within this ceiling

    assert answers and answers[0]["status"] == "approved"


@pytest.mark.django_db(transaction=True)
def test_one_recheck_reads_every_call_the_process_waits_on_and_wakes_only_the_decided(poller, settings, monkeypatch):
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 0.2
    decided, *pending = [poller.propose(thread_id=f"t-{i}", idempotency_key=f"k-{i}")["id"] for i in range(3)]
    ToolCall.objects.filter(pk=decided).update(status=ToolCall.Status.APPROVED)
    checked: list[list[int]] = []
    original = waiting.decided_among

    def decided_among(call_ids):
        checked.append(sorted(call_ids))
        return original(call_ids)

    monkeypatch.setattr(waiting, "decided_among", decided_among)

    async def wait_on_all():
        async with waiting.Waiter(decided) as woken, waiting.Waiter(pending[0]) as a, waiting.Waiter(pending[1]) as b:
            await asyncio.wait_for(woken.event.wait(), 20)
            return a.event.is_set(), b.event.is_set()

    assert asyncio.run(wait_on_all()) == (False, False)
    assert checked[0] == sorted([decided, *pending])  # one query for the three waiting calls


@contextlib.asynccontextmanager
async def _one_slot_asgi_client(token: str, settings):
    """An HTTP client of the ASGI app with one request slot (runtime/slots.py), as this agent; no re-check."""
    import httpx

    from reviewhub.asgi import application

    settings.WEB_REQUEST_SLOTS = 1
    settings.REVIEWHUB_WAIT_RECHECK_SECONDS = 120
    headers = {"Authorization": f"Bearer {token}"}
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as http:
        yield http


async def _waiting_asgi_poll(http, call_id: int) -> asyncio.Task:
    """A long-poll of 60 s on the call through the ASGI app, once it waits."""
    poll = asyncio.create_task(http.get(f"/api/v1/calls/{call_id}", params={"wait": 60}, timeout=90))
    deadline = asyncio.get_running_loop().time() + 30
    while call_id not in waiting._waiters:
        assert asyncio.get_running_loop().time() < deadline, "the long-poll never started waiting"
        await asyncio.sleep(0.01)
    return poll


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_through_the_asgi_app_a_waiting_long_poll_holds_no_request_slot(proposed, settings):
    """One slot (runtime/slots.py): had the waiting long-poll kept it, the proposal would wait for its 60 s."""
    from asgiref.sync import sync_to_async

    agent, reviewer, call = proposed
    async with _one_slot_asgi_client(agent.token, settings) as http:
        poll = await _waiting_asgi_poll(http, call.pk)
        other = await http.post("/api/v1/calls", json=PROPOSAL | {"idempotency_key": "other"}, timeout=30)
        assert other.status_code == 201 and not poll.done()

        try:
            await sync_to_async(services.toolcall_decide)(
                call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash
            )
        finally:
            await sync_to_async(connections.close_all)()  # asgiref's thread's, before the database is dropped
        assert (await asyncio.wait_for(poll, 30)).json()["status"] == "approved"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_through_the_asgi_app_a_told_approval_is_answered_then_noted_as_read_when_answered(
    proposed, reads, settings
):
    """The woken long-poll reads nothing: its answer goes out with no slot (runtime/slots.py), and the read of
    the approval is noted after, stamped with the time of the answer (remote/api._told)."""
    from asgiref.sync import sync_to_async
    from django.utils import timezone

    agent, reviewer, call = proposed
    async with _one_slot_asgi_client(agent.token, settings) as http:
        poll = await _waiting_asgi_poll(http, call.pk)
        try:
            await sync_to_async(services.toolcall_decide)(
                call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.review_hash
            )
            answer = await asyncio.wait_for(poll, 30)
            answered = timezone.now()
            read_at, deadline = None, asyncio.get_running_loop().time() + 30
            while read_at is None:
                assert asyncio.get_running_loop().time() < deadline, "the read was never noted"
                await asyncio.sleep(0.01)
                remote = await RemoteCall.objects.aget(pk=call.pk)
                read_at = remote.approval_read_at
        finally:
            await sync_to_async(connections.close_all)()  # asgiref's thread's, before the database is dropped

    assert answer.json()["status"] == "approved" and reads == [call.pk]  # its first read, when it started
    assert read_at <= answered
