"""AG-UI agents ReviewHub runs: where each one is served, and what was sent to it and answered.

An agent's tools that need review are declared as a remote agent's are (remote.DeclaredTool, versioned) under
the remote identity `declarer`; its runs are ordinary runs (advanced_by "agui") whose thread is a remote.Thread,
and each interrupt is an ordinary ToolCall with its remote.RemoteCall (the declaration it was shown under).
ReviewHub's own tools it is offered as client tools (`offered_tools`, by registry name) are called like ReviewHub's
agent calls them: each such call is an ordinary ToolCall of that tool, with its ClientCall.
What is ours: the endpoint, and one Exchange per RunAgentInput posted (the once guard of every resumption).
"""

from django.db import models

from approvals.models import Run, ToolCall
from remote.models import AGENT_NAME, RemoteAgent


class AguiAgent(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[AGENT_NAME])
    title = models.CharField(max_length=200, blank=True)
    endpoint_url = models.URLField(max_length=2000, help_text="The agent's AG-UI endpoint (POST, answers with SSE).")
    secret_header = models.CharField(
        max_length=100, blank=True, help_text="A header sent with every request, e.g. Authorization (optional)."
    )
    secret_value = models.CharField(max_length=2000, blank=True, help_text="Its value; never shown again.")
    # {"tool_name": {"input_schema": ..., "tier": ..., "description_template": ..., "decisions": [...]}, ...}
    tools = models.JSONField(default=dict, blank=True, help_text="The tools that need review, declared by name.")
    # ["issue_refund", ...]: registered tools sent in RunAgentInput.tools; ReviewHub gates and runs their calls.
    offered_tools = models.JSONField(
        default=list, blank=True, help_text="ReviewHub's own tools offered to the agent as client tools."
    )
    declarer = models.OneToOneField(RemoteAgent, on_delete=models.PROTECT, related_name="agui_agent", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "AG-UI agent"

    def __str__(self):
        return self.name

    @property
    def label(self) -> str:
        return self.title or f"{self.name} (AG-UI)"

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.secret_header and self.secret_value:
            headers[self.secret_header] = self.secret_value
        return headers


class Exchange(models.Model):
    """One RunAgentInput posted to the agent and the stream it answered. (run, seq) is unique: of two workers
    resuming the same decisions, one stores the next exchange, and one claims it to send (READY -> SENDING)."""

    class Status(models.TextChoices):
        READY = "ready"  # to be sent (again, after the agent could not be reached)
        SENDING = "sending"
        # RUN_FINISHED with interrupts, or with calls of the tools ReviewHub offered: its pauses are calls
        INTERRUPTED = "interrupted"
        FINISHED = "finished"
        FAILED = "failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="agui_exchanges")
    seq = models.PositiveIntegerField()
    agui_run_id = models.CharField(max_length=64)
    input = models.JSONField(default=dict)
    messages = models.JSONField(default=list)  # the thread's AG-UI messages after its stream (the next input's)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.READY)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="agui_exchange_once")]


class Interrupt(models.Model):
    """One interrupt of an interrupted exchange, as the agent sent it, and the call a person decides for it."""

    exchange = models.ForeignKey(Exchange, on_delete=models.CASCADE, related_name="interrupts")
    interrupt_id = models.CharField(max_length=200)
    tool_call = models.OneToOneField(ToolCall, on_delete=models.PROTECT, related_name="agui_interrupt")
    sent = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["exchange", "interrupt_id"], name="agui_interrupt_unique")]


class ClientCall(models.Model):
    """A call of a tool ReviewHub offered that an exchange's stream ended with (no result): ReviewHub gated it, runs it
    once approved, and the next input carries its output as a tool message."""

    exchange = models.ForeignKey(Exchange, on_delete=models.CASCADE, related_name="client_calls")
    tool_call = models.OneToOneField(ToolCall, on_delete=models.PROTECT, related_name="agui_client_call")
