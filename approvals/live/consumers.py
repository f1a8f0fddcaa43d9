"""Live pushes. Thin: check the login, join a group, pass hints on.

Both sockets send HTML fragments that htmx's WebSocket extension swaps out of
band. The queue socket sends each reviewer the count, the call's row and a toast,
rendered from the database after the commit (approvals/live/fanout.py works it out
once per process, and its one listener per process hands each socket its push).
The run socket sends an element that, swapped in, makes the run page re-read its
body over HTTP, through the same view and partial as the page.
"""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from approvals import access
from approvals.live import fanout, run_group

REFUSED = 4403
NOT_FOUND = 4404


class QueueConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not await database_sync_to_async(access.is_reviewer)(user):
            await self.close(code=REFUSED)
            return
        await self.accept()
        self.user_id = user.pk
        await fanout.subscribe(self, self.user_id)  # the process's listener sends this socket its pushes

    async def disconnect(self, code):
        if hasattr(self, "user_id"):
            fanout.unsubscribe(self, self.user_id)


class RunConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        if not await database_sync_to_async(access.can_see_run)(self.scope.get("user"), run_id):
            await self.close(code=REFUSED)
            return
        self.group = run_group(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_changed(self, event):
        await self.send(text_data=render_to_string("approvals/partials/run_changed.html", {"run_id": event["run_id"]}))


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other socket path: refused before it opens."""

    async def connect(self):
        await self.close(code=NOT_FOUND)
