"""What an AG-UI event stream says, gathered from the SDK's own event models (ag_ui.core).

The events are applied to the thread's messages (AG-UI messages, sent back on the next input: stateless
agents such as Pydantic AI's read the history from it), and what happened in this stream is kept in order
for the run's transcript: text, tool calls with their arguments, tool results, how the run finished.
"""

import json
from dataclasses import dataclass, field

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    ToolCall,
    ToolMessage,
)


@dataclass
class Seen:
    """A tool call of this stream: name, arguments (JSON text), and the result the agent reported, if any."""

    id: str
    name: str
    message_id: str
    arguments: str = ""
    result: str | None = None


@dataclass
class Conversation:
    messages: list = field(default_factory=list)  # AG-UI messages (pydantic models of ag_ui.core)
    texts: dict[str, str] = field(default_factory=dict)  # message id -> text of this stream
    calls: dict[str, Seen] = field(default_factory=dict)  # tool call id -> call seen in this stream
    order: list[tuple[str, str]] = field(default_factory=list)  # ("text", message id) / ("call", call id)
    interrupts: list[Interrupt] = field(default_factory=list)
    pending_ids: list[str] = field(default_factory=list)  # the calls RUN_FINISHED left for the client to answer
    finished: bool = False
    error: str = ""

    def __post_init__(self):
        self.sent_ids = {message.id for message in self.messages}  # what the input held already

    def apply(self, event) -> None:
        handler = getattr(self, f"_on_{event.type.value.lower()}", None)
        if handler is not None:
            handler(event)

    def _assistant(self, message_id: str) -> AssistantMessage:
        for message in self.messages:
            if message.id == message_id and message.role == "assistant":
                return message
        message = AssistantMessage(id=message_id, role="assistant")
        self.messages.append(message)
        return message

    def _text(self, message_id: str | None, delta: str) -> None:
        message_id = message_id or (self.order[-1][1] if self.order and self.order[-1][0] == "text" else "text")
        if message_id not in self.texts:
            self.texts[message_id] = ""
            self.order.append(("text", message_id))
        self.texts[message_id] += delta or ""
        message = self._assistant(message_id)
        message.content = (message.content or "") + (delta or "")

    def _on_text_message_start(self, event) -> None:
        self._text(event.message_id, "")

    def _on_text_message_content(self, event) -> None:
        self._text(event.message_id, event.delta)

    def _on_text_message_chunk(self, event) -> None:
        self._text(event.message_id, event.delta or "")

    def _call_start(self, call_id: str, name: str, parent: str | None) -> None:
        if call_id in self.calls:
            return
        parent = parent or f"msg-{call_id}"
        self.calls[call_id] = Seen(call_id, name, parent)
        self.order.append(("call", call_id))
        message = self._assistant(parent)
        tool_call = ToolCall(id=call_id, type="function", function=FunctionCall(name=name, arguments=""))
        message.tool_calls = [*(message.tool_calls or []), tool_call]

    def _call_args(self, call_id: str, delta: str) -> None:
        seen = self.calls.get(call_id)
        if seen is None:
            return
        seen.arguments += delta or ""
        for tool_call in self._assistant(seen.message_id).tool_calls or []:
            if tool_call.id == call_id:
                tool_call.function.arguments = seen.arguments

    def _on_tool_call_start(self, event) -> None:
        self._call_start(event.tool_call_id, event.tool_call_name, event.parent_message_id)

    def _on_tool_call_args(self, event) -> None:
        self._call_args(event.tool_call_id, event.delta)

    def _on_tool_call_chunk(self, event) -> None:
        call_id = event.tool_call_id or (self.order[-1][1] if self.order and self.order[-1][0] == "call" else "")
        if event.tool_call_name and call_id:
            self._call_start(call_id, event.tool_call_name, event.parent_message_id)
        self._call_args(call_id, event.delta or "")

    def _on_tool_call_result(self, event) -> None:
        content = (
            event.content if isinstance(event.content, str) else " ".join(getattr(p, "text", "") for p in event.content)
        )
        seen = self.calls.get(event.tool_call_id)
        if seen is None:  # the result of a call made in an earlier stream (an interrupted one, now resumed)
            self.calls[event.tool_call_id] = seen = Seen(event.tool_call_id, "", "")
            self.order.append(("call", event.tool_call_id))
        seen.result = content
        self.messages.append(ToolMessage(id=event.message_id, role="tool", content=content, tool_call_id=seen.id))

    def _on_messages_snapshot(self, event: MessagesSnapshotEvent) -> None:
        self.messages = list(event.messages)

    def _on_run_finished(self, event: RunFinishedEvent) -> None:
        self.finished = True
        outcome = event.outcome
        if isinstance(outcome, RunFinishedInterruptOutcome):
            self.interrupts = list(outcome.interrupts)
        elif isinstance(outcome, RunFinishedSuccessOutcome):
            self.pending_ids = list(outcome.pending_tool_call_ids or [])

    def _on_run_error(self, event: RunErrorEvent) -> None:
        self.error = event.message or "the agent reported an error"

    def tool_call(self, call_id: str) -> Seen | None:
        """A tool call by id: as the messages hold it (a snapshot may be all an agent sends, and holds the whole
        arguments), else as streamed."""
        for message in self.messages:
            for tool_call in getattr(message, "tool_calls", None) or []:
                if tool_call.id == call_id and tool_call.function.arguments:
                    return Seen(call_id, tool_call.function.name, message.id, tool_call.function.arguments)
        return self.calls.get(call_id)

    def concerned_call(self, interrupt: Interrupt) -> Seen | None:
        """The tool call a tool-approval interrupt is about: the one it names, unless that one is a confirmation
        request for another call of this stream (ag-ui-adk names its adk_request_confirmation call, whose arguments
        hold {"originalFunctionCall": {"id", "name", "args"}}): then the call it asks about."""
        named = self.tool_call(interrupt.tool_call_id) if interrupt.tool_call_id else None
        wrapped = _original_call(named.arguments) if named is not None else {}
        original = self.tool_call(wrapped["id"]) if isinstance(wrapped.get("id"), str) else None
        return original if original is not None and original.name == wrapped.get("name") else named

    def interrupted_call_ids(self) -> set[str]:
        """The calls this stream's interrupts hold for a decision (not run by the agent): named, and asked about."""
        ids = {i.tool_call_id for i in self.interrupts if i.tool_call_id}
        return ids | {call.id for call in map(self.concerned_call, self.interrupts) if call is not None}

    def snapshot_texts(self) -> list[str]:
        """Assistant text only a snapshot told of (an agent that streams no text events): new, not streamed."""
        return [
            m.content
            for m in self.messages
            if m.role == "assistant"
            and m.id not in self.sent_ids
            and m.id not in self.texts
            and (m.content or "").strip()
        ]

    def all_texts(self) -> list[str]:
        return [text for text in self.texts.values() if text.strip()] + self.snapshot_texts()

    def results(self) -> dict[str, str]:
        """Tool results by call id that this stream told of (streamed or in a snapshot); not those the input held
        already, such as a tool's interim answer before its interrupt, sent back with the resume."""
        found = {}
        for message in self.messages:
            if message.role == "tool" and message.id not in self.sent_ids:
                content = message.content
                found[message.tool_call_id] = content if isinstance(content, str) else _text(content)
        return found

    def messages_json(self) -> list[dict]:
        return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in self.messages]


def _original_call(arguments: str) -> dict:
    try:
        found = json.loads(arguments or "{}")
    except ValueError:
        return {}
    wrapped = found.get("originalFunctionCall") if isinstance(found, dict) else None
    return wrapped if isinstance(wrapped, dict) else {}


def _text(parts) -> str:
    return " ".join(getattr(part, "text", "") or "" for part in parts)
