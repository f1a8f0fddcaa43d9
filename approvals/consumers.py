"""Live pushes. Thin: check the login, join a group, and on each hint re-read
the database and send the same partial the page renders."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.template.loader import render_to_string

from .access import can_decide, is_reviewer, visible_calls
from .live import QUEUE_GROUP, run_group
from .models import Run, ToolCall


def render_call_event(user, call_id: int) -> dict | None:
    call = visible_calls(user).select_related("run", "run__requested_by").filter(pk=call_id).first()
    if call is None:
        return None
    allowed, why = can_decide(user, call)
    decision = call.final_decision()
    html = render_to_string(
        "approvals/partials/call_panel.html",
        {"call": call, "decision": decision, "can_decide": allowed and call.is_pending, "why_not": why, "user": user},
    )
    count = visible_calls(user, ToolCall.objects.filter(status=ToolCall.Status.PENDING)).count()
    return {
        "type": "call",
        "id": call.pk,
        "pending": call.is_pending,
        "status": call.get_status_display(),
        "outcome": f"{decision.get_verdict_display()} by {decision.reviewer_label}" if decision else call.get_status_display(),
        "description": call.description,
        "count": count,
        "html": html,
    }


def render_run_event(user, run_id: int) -> dict | None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    html = render_to_string(
        "approvals/partials/run_body.html",
        {
            "run": run,
            "messages_": run.messages.order_by("seq"),
            "calls": run.tool_calls.prefetch_related("decisions__reviewer").order_by("created_at", "id"),
            "user": user,
        },
    )
    return {"type": "run", "id": run.pk, "status": run.status, "thinking": run.thinking, "html": html}


class QueueConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if not await database_sync_to_async(is_reviewer)(user):
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(QUEUE_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self.channel_layer.group_discard(QUEUE_GROUP, self.channel_name)

    async def call_changed(self, event):
        message = await database_sync_to_async(render_call_event)(self.scope["user"], event["call_id"])
        if message is not None:
            await self.send_json(message)


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if not (user and user.is_authenticated):
            await self.close(code=4403)
            return
        self.group = run_group(self.scope["url_route"]["kwargs"]["run_id"])
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_changed(self, event):
        message = await database_sync_to_async(render_run_event)(self.scope["user"], event["run_id"])
        if message is not None:
            await self.send_json(message)
