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
  and Retry has the model read what happened and write a new draft.

A checkpoint that pauses after_tool("x") holds the output of a call of x the same way, as one held call after
that step, before the model reads on; once approved, the model reads the checkpoint's output.

The transcript stays valid chat: the held reply is an assistant message whose one tool call is the
checkpoint, followed by its tool row, and the final answer is an assistant message after it.
"""

import json

from django.db import transaction

from approvals import services
from approvals.models import Message, Run, ToolCall

from .agents import BEFORE_FINAL_ANSWER, Checkpoint
from .agents import registry as agents

EXECUTED = ToolCall.Status.EXECUTED
# A draft sent back (or refused by the gate, an empty one say): the model reads why, and writes again.
GO_ON = (ToolCall.Status.REJECTED, ToolCall.Status.INVALID, ToolCall.Status.CANCELLED)
FAILED_BECAUSE: dict[str, str] = {
    ToolCall.Status.EXPIRED: "The draft #{pk} of “{title}” was not reviewed in time: it was not sent, and the run"
    " stops here. Retry has the model read that and write a new draft.",
    ToolCall.Status.FAILED: "The approved draft #{pk} of “{title}” could not be delivered ({output}). Retry has"
    " the model read that and go on.",
}


def _checkpoints(run: Run) -> tuple[Checkpoint, ...]:
    agent = agents.get(run.agent)
    return agent.checkpoints if agent and run.advancer.calls_model else ()


def _held(run: Run, checkpoint: Checkpoint, draft: str, messages: list[dict], seq: int):
    arguments = {"draft": draft} | (checkpoint.about(messages) if checkpoint.about else {})
    call_id = f"checkpoint-{checkpoint.name}-{seq}"
    return services.ProposedCall(call_id, checkpoint.name, json.dumps(arguments), ToolCall.Kind.CHECKPOINT)


def hold_final_answer(run: Run, content: str, calls: list, messages: list[dict]) -> tuple[str, list]:
    """The reply as the step to record: unchanged, or, for a final answer at a checkpoint, held as a draft."""
    checkpoint = next((c for c in _checkpoints(run) if c.pauses == BEFORE_FINAL_ANSWER), None)
    if calls or checkpoint is None:
        return content, calls
    return "", [_held(run, checkpoint, content or "", messages, run.step_count)]


def settle(run: Run, step: Message) -> bool:
    """Once a step is answered: a decided checkpoint's draft becomes the final answer, or the run fails with the
    reason (expired, not delivered); a tool a checkpoint follows has its output held as a draft. Whether it did
    any of these; otherwise (a draft sent back, a checkpoint after a tool approved) the model goes on."""
    checkpoints = _checkpoints(run)
    names = {c["function"]["name"] for c in step.tool_calls}
    if not names & {name for c in checkpoints for name in (c.name, c.after_tool) if name}:
        return False  # decided in memory: a step without a checkpoint's tool costs no statement
    call = step.calls.filter(kind=ToolCall.Kind.CHECKPOINT).first()
    if call is None:
        return _hold_after_tool(run, step, [c for c in checkpoints if c.after_tool in names])
    checkpoint = next((c for c in checkpoints if c.name == call.tool_name), None)
    if checkpoint is None or call.status in GO_ON or (call.status == EXECUTED and checkpoint.after_tool):
        return False  # the model goes on (a checkpoint since removed from the agent, too)
    if call.status == EXECUTED:
        approved = call.approved_arguments
        assert approved is not None  # an executed call ran with the arguments approved
        return _once_after(run, step, lambda: _answer(run, approved["draft"]))
    reason = FAILED_BECAUSE.get(call.status, "The checkpoint #{pk} “{title}” ended as {output}.")
    reason = reason.format(pk=call.pk, title=checkpoint.title, output=call.output or call.status)
    if run.last_error == reason:
        return False  # retried after this very failure: the model reads what happened and goes on
    services.run_fail(run=run, error=reason)
    return True


def _hold_after_tool(run: Run, step: Message, checkpoints: list[Checkpoint]) -> bool:
    """The output of the tool a checkpoint follows, held as a draft before the model reads it again."""
    found = [(c, r) for c in checkpoints if (r := step.calls.filter(tool_name=c.after_tool, status=EXECUTED).last())]
    if not found:
        return False
    checkpoint, ran = found[0]
    messages = [m.as_openai() for m in run.messages.order_by("seq")]
    held = _held(run, checkpoint, ran.output, messages, step.seq)
    return _once_after(run, step, lambda: services.step_record(run=run, content="", calls=[held]))


def _answer(run: Run, text: str) -> None:
    services.run_resumed(run=run)
    services.message_append(run=run, role=Message.Role.ASSISTANT, content=text)


def _once_after(run: Run, step: Message, write) -> bool:
    """write() the next assistant row after the answered step (the final answer, or a held checkpoint), once,
    whoever else resumes the run at the same time."""
    with transaction.atomic():
        services.run_lock(run_id=run.pk)
        if not run.messages.filter(seq__gt=step.seq, role=Message.Role.ASSISTANT).exists():
            write()
    return True
