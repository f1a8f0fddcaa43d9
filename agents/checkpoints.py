"""Checkpoints in the loop: a final answer held as a draft, and the run finished once the draft is decided.

An agent with a checkpoint that pauses BEFORE_FINAL_ANSWER (agents/agents.py) never ends on the model's
word: a reply without tool calls becomes one pending call of kind checkpoint, {"draft": text}, put through
the gate like any call (groups, expiry, claims, the trail, live pushes), and the run waits holding nothing.

- Approved (as edited): the checkpoint's tool runs once, through the exactly-once path of every approved
  call (the demo's emails the customer); then the approved draft is appended as the run's final assistant
  message and the run completes.
- Sent back (rejected with guidance): the model reads the rejection and the guidance, and writes again;
  its next reply without tool calls is a new draft, a new checkpoint call.
- Expired (or its tool failed): nothing is answered in the reviewer's name; the run fails with the reason,
  and Retry asks the model for a new draft.

The transcript stays valid chat: the held reply is an assistant message whose one tool call is the
checkpoint, followed by its tool row, and the final answer is an assistant message after it.
"""

import json

from django.db import transaction

from approvals import services
from approvals.models import Message, Run, ToolCall

from .agents import Checkpoint
from .agents import registry as agents

# A draft sent back (or refused by the gate, an empty one say): the model reads why, and writes again.
GO_ON = (ToolCall.Status.REJECTED, ToolCall.Status.INVALID, ToolCall.Status.CANCELLED)
FAILED_BECAUSE = {
    ToolCall.Status.EXPIRED: "The draft of “{title}” was not reviewed in time: it was not sent, and the run has"
    " no final answer. Retry asks the model for a new draft.",
    ToolCall.Status.FAILED: "The approved draft of “{title}” could not be delivered ({output}).",
}


def _checkpoint(run: Run) -> Checkpoint | None:
    agent = agents.get(run.agent)
    return agent.final_answer_checkpoint() if agent and not run.is_remote else None


def hold_final_answer(run: Run, content: str, calls: list, messages: list[dict]) -> tuple[str, list]:
    """The reply as the step to record: unchanged, or, for a final answer at a checkpoint, held as a draft."""
    checkpoint = _checkpoint(run)
    if calls or checkpoint is None:
        return content, calls
    arguments = {"draft": content or ""} | (checkpoint.about(messages) if checkpoint.about else {})
    call_id = f"checkpoint-{checkpoint.name}-{run.step_count}"
    held = services.ProposedCall(call_id, checkpoint.name, json.dumps(arguments), ToolCall.Kind.CHECKPOINT)
    return "", [held]


def settle(run: Run, step: Message) -> bool:
    """After a checkpoint's step is answered: the approved draft becomes the final answer, or the run fails
    with the reason (expired, not delivered). Whether it did either; a draft sent back goes to the model."""
    checkpoint = _checkpoint(run)
    if checkpoint is None or all(c["function"]["name"] != checkpoint.name for c in step.tool_calls):
        return False  # decided in memory: a step without the checkpoint costs no statement
    call = step.calls.filter(kind=ToolCall.Kind.CHECKPOINT).first()
    if call is None or call.status in GO_ON:
        return False
    if call.status == ToolCall.Status.EXECUTED:
        _append_answer(run, step, (call.approved_arguments or {}).get("draft", ""))
        return True
    reason = FAILED_BECAUSE.get(call.status, "The checkpoint “{title}” ended as {output}.")
    services.run_fail(run=run, error=reason.format(title=checkpoint.title, output=call.output or call.status))
    return True


def _append_answer(run: Run, step: Message, text: str) -> None:
    """The approved draft as the run's final assistant message, once, whoever else resumes the run."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).first()
        later = run.messages.filter(seq__gt=step.seq, role=Message.Role.ASSISTANT).exists()
        if not later:
            services.run_resumed(run=run)
            services.message_append(run=run, role=Message.Role.ASSISTANT, content=text)
