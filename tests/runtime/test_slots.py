"""At most WEB_REQUEST_SLOTS HTTP requests at work at once in an ASGI process; a waiting request holds none."""

import asyncio

import pytest
from asgiref.sync import sync_to_async

from runtime import slots

pytestmark = pytest.mark.asyncio


class App:
    """An ASGI app whose requests wait for `go_on`, counting how many are at work at once."""

    def __init__(self):
        self.at_work = self.most = self.done = 0
        self.go_on = asyncio.Event()

    async def __call__(self, scope, receive, send):
        self.at_work += 1
        self.most = max(self.most, self.at_work)
        try:
            if scope.get("path") == "/wait":
                async with slots.released():
                    await self.go_on.wait()
            else:
                await self.go_on.wait()
        finally:
            self.at_work -= 1
            self.done += 1


async def until(condition, seconds: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not within the ceiling"
        await asyncio.sleep(0.01)


def request(app, path: str = "/", kind: str = "http", method: str = "POST"):
    return asyncio.create_task(slots.limited(app)({"type": kind, "path": path, "method": method}, None, None))


async def test_no_more_requests_are_at_work_than_there_are_slots(settings):
    settings.WEB_REQUEST_SLOTS = 2
    app = App()
    requests = [request(app) for _ in range(5)]
    await until(lambda: app.at_work == 2)
    await asyncio.sleep(0.05)  # the three others stay waiting for a slot
    app.go_on.set()
    await asyncio.wait_for(asyncio.gather(*requests), 30)

    assert (app.most, app.done) == (2, 5)


async def test_a_request_that_waits_gives_its_slot_back_meanwhile(settings):
    settings.WEB_REQUEST_SLOTS = 1
    app = App()
    waiting = request(app, "/wait")
    await until(lambda: app.at_work == 1)
    other = request(app)
    await until(lambda: app.at_work == 2)  # had the waiting request kept its slot, this would never come

    app.go_on.set()
    await asyncio.wait_for(asyncio.gather(waiting, other), 30)
    assert app.done == 2


async def test_sockets_and_a_limit_of_zero_are_not_limited(settings):
    settings.WEB_REQUEST_SLOTS = 1
    app = App()
    sockets = [request(app, kind="websocket") for _ in range(3)]
    await until(lambda: app.at_work == 3)
    settings.WEB_REQUEST_SLOTS = 0
    unlimited = [request(app) for _ in range(3)]
    await until(lambda: app.at_work == 6)
    app.go_on.set()
    await asyncio.wait_for(asyncio.gather(*sockets, *unlimited), 30)


@pytest.mark.django_db(transaction=True)
async def test_the_requests_of_a_slot_use_its_thread_and_its_database_connection_again(settings):
    """Django under ASGI would open (and close) a connection in a new thread for each of these requests."""
    import threading

    import httpx
    from asgiref.sync import sync_to_async
    from django.db import connections
    from django.db.backends.signals import connection_created

    from remote.services import agent_get_or_create
    from remote.tokens import token_create
    from reviewhub.asgi import application

    settings.WEB_REQUEST_SLOTS, settings.WEB_CONN_MAX_AGE = 1, 300
    token = await sync_to_async(lambda: token_create(agent=agent_get_or_create(name="slotted")[0])[1])()
    await sync_to_async(connections.close_all)()
    opened: list[str] = []
    connection_created.connect(
        lambda sender, connection, **kwargs: opened.append(threading.current_thread().name),
        weak=False,
        dispatch_uid="slots-test",
    )
    headers = {"Authorization": f"Bearer {token}"}
    transport = httpx.ASGITransport(app=application)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as http:
            answers = [(await http.get("/api/v1/tools")).status_code for _ in range(3)]
    finally:
        connection_created.disconnect(dispatch_uid="slots-test")
        await slots.close_connections()

    assert answers == [200, 200, 200]
    assert len(opened) == 1 and opened[0].startswith("web-slot")


async def test_a_request_done_waiting_takes_the_next_slot_before_requests_that_wait_for_one(settings):
    settings.WEB_REQUEST_SLOTS = 1
    events = {name: asyncio.Event() for name in ("decided", "b", "c")}
    order: list[str] = []

    async def app(scope, receive, send):
        name = scope["path"]
        if name == "a":  # a long-poll: waits for its decision without a slot, then reads (sync work)
            async with slots.released():
                await events["decided"].wait()
            await sync_to_async(order.append)(name)
            return
        await events[name].wait()
        order.append(name)

    a = request(app, "a")
    await asyncio.sleep(0.01)
    b = request(app, "b")  # holds the one slot
    await asyncio.sleep(0.01)
    c = request(app, "c")  # waits for it
    await asyncio.sleep(0.01)
    events["decided"].set()  # a waits for it too, now: before c
    await asyncio.sleep(0.01)
    events["c"].set()
    events["b"].set()
    await asyncio.wait_for(asyncio.gather(a, b, c), 30)

    assert order == ["b", "a", "c"]


class PollBehindBusy:
    """An app of a long-poll ("poll": waits for `decided` with its slot given back, then notes itself in `ran`,
    as sync work if `sync_after`) and of other requests (each waits for `busy_done`, then notes itself)."""

    def __init__(self, *, sync_after: bool):
        self.decided, self.busy_done = asyncio.Event(), asyncio.Event()
        self.ran: list[str] = []
        self.sync_after = sync_after

    async def __call__(self, scope, receive, send):
        if scope["path"] != "poll":
            await self.busy_done.wait()
            self.ran.append(scope["path"])
            return
        async with slots.released():
            await self.decided.wait()
        if self.sync_after:
            await sync_to_async(self.ran.append)("poll")  # waits for the slot the busy request holds
        else:
            self.ran.append("poll")

    async def decided_while_busy(self) -> tuple[asyncio.Task, asyncio.Task]:
        """The poll waiting, a request holding the one slot, then the decision: (the poll, the busy request)."""
        poll = request(self, "poll", method="GET")
        await asyncio.sleep(0.01)
        busy = request(self, "busy")
        await asyncio.sleep(0.01)
        self.decided.set()
        return poll, busy


async def test_a_request_done_waiting_with_no_sync_work_left_needs_no_slot(settings):
    """A long-poll told its answer by the decision (remote/api.py) answers while another request holds the slot."""
    settings.WEB_REQUEST_SLOTS = 1
    app = PollBehindBusy(sync_after=False)
    poll, busy = await app.decided_while_busy()
    await asyncio.wait_for(poll, 30)
    app.busy_done.set()
    await asyncio.wait_for(busy, 30)

    assert app.ran == ["poll", "busy"]


async def test_a_request_that_ends_while_waiting_for_a_slot_again_leaves_none_taken(settings):
    settings.WEB_REQUEST_SLOTS = 1
    app = PollBehindBusy(sync_after=True)
    poll, busy = await app.decided_while_busy()
    await asyncio.sleep(0.05)
    poll.cancel()  # its client went away
    app.busy_done.set()
    await asyncio.wait_for(busy, 30)
    await asyncio.wait_for(request(app, "after"), 30)  # had the ended request kept a slot, this would wait on

    assert app.ran == ["busy", "after"] and poll.cancelled()
    assert len(slots._pools[asyncio.get_running_loop()].idle) == 1


async def test_a_read_waiting_for_a_slot_gets_one_before_the_writes_waiting_before_it(settings):
    """A long-poll's first read, or an agent's look at a decision, must not queue behind a fleet's proposals."""
    settings.WEB_REQUEST_SLOTS = 1
    go_on = asyncio.Event()
    order: list[str] = []

    async def app(scope, receive, send):
        if scope["path"] == "busy":
            await go_on.wait()
        order.append(scope["path"])

    busy = request(app, "busy")  # holds the one slot
    await asyncio.sleep(0.01)
    writes = [request(app, f"propose {i}") for i in range(3)]
    await asyncio.sleep(0.01)
    reads = [request(app, "read 1", method="GET"), request(app, "read 2", method="HEAD")]
    await asyncio.sleep(0.01)
    go_on.set()
    await asyncio.wait_for(asyncio.gather(busy, *writes, *reads), 30)

    assert order == ["busy", "read 1", "read 2", "propose 0", "propose 1", "propose 2"]
