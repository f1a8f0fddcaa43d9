"""What every framework adapter does with ReviewHub: propose a paused tool call once, wait for its decision, and
run an approved tool body exactly once across every process that resumes the run."""

from collections.abc import Callable
from typing import Any

from .client import ReviewHub
from .errors import NotApproved
from .models import Call
from .store import Store

Facts = Callable[[str, dict], dict | None]


class Gate:
    """One thread (a conversation, a run) of a framework agent, bound to ReviewHub and to a Store.

    `facts(tool, arguments)` fetches, by the agent's own code, what a reviewer should see beside the call."""

    def __init__(
        self,
        hub: ReviewHub,
        store: Store,
        thread_id: str,
        *,
        user_request: str | None = None,
        facts: Facts | None = None,
    ):
        self.hub, self.store, self.thread_id = hub, store, thread_id
        self.user_request, self.facts = user_request, facts

    def propose(self, tool_call_id: str, tool: str, arguments: dict, *, reasoning: str | None = None) -> Call:
        """Propose the framework's tool call (once: a known one returns the call already proposed)."""
        known = self.store.call_id(self.thread_id, tool_call_id)
        if known is not None:
            return self.hub.call(known)
        call = self.hub.propose(
            thread_id=self.thread_id,
            tool=tool,
            arguments=arguments,
            idempotency_key=f"{self.thread_id}:{tool_call_id}",
            reasoning=reasoning or None,
            user_request=self.user_request,
            facts=self.facts(tool, arguments) if self.facts else None,
        )
        self.store.remember(self.thread_id, tool_call_id, call.id)
        return call

    def call_for(self, tool_call_id: str) -> int:
        call_id = self.store.call_id(self.thread_id, tool_call_id)
        if call_id is None:
            raise NotApproved(f"tool call {tool_call_id} of thread {self.thread_id} was never proposed to ReviewHub")
        return call_id

    def decision(self, tool_call_id: str, *, timeout: float | None = None) -> Call:
        """The call once decided (long-polling ReviewHub); still pending only if `timeout` ran out."""
        return self.hub.wait(self.call_for(tool_call_id), timeout=timeout)

    def execute(self, tool_call_id: str, body: Callable[..., Any], *, note_changes: bool = False) -> str:
        """Run `body(**approved arguments)` if this process wins the execution claim; else the recorded output.

        The arguments are the decision's (the reviewer's edit, if any), whatever the framework passed; with
        `note_changes` the output starts by telling the model what the reviewer changed."""
        execution = self.hub.execute_once(self.call_for(tool_call_id), body)
        changes = execution.call.decision.changes if execution.call.decision else []
        if note_changes and changes:
            said = ", ".join(f"{c.field} from {_shown(c.before)!r} to {_shown(c.after)!r}" for c in changes)
            return f"Note: a reviewer changed {said} before this ran. {execution.output}"
        return execution.output


def _shown(value: Any) -> Any:
    """A value as the model reads it in a note: a whole float as the integer it is (49, not 49.0)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
