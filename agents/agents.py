"""The agents a run can be started with: a name, a prompt, and the tools it may use.

Apps register their agents when Django starts (in AppConfig.ready(), see shop/agents.py):
`agents.agents.registry.register(Agent(...))`. A run's model is offered only its agent's
tools, and the gate treats any other tool as one that does not exist.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from approvals.tools import registry as tools

if TYPE_CHECKING:
    from approvals.models import Run

# When a checkpoint pauses the run: before the final answer, or after_tool("name") has run.
BEFORE_FINAL_ANSWER = "before_final_answer"
AFTER = "after:"


def after_tool(name: str) -> str:
    """`pauses` for a checkpoint held once the named tool has run (its output is the draft)."""
    return AFTER + name


@dataclass(frozen=True)
class Checkpoint:
    """A named stage of an agent's work where a person sees the state, may edit it, and resumes.

    `name` is a tool registered with kind "checkpoint" (never offered to the model): its arguments are
    what the reviewer is shown and decides on ({"draft": ...}), and its code runs once the draft is
    approved (the demo's sends the reply to the customer). With `pauses` BEFORE_FINAL_ANSWER, a model
    reply without tool calls is held as a draft; only once approved (as edited) is it the run's answer.
    With after_tool("x"), the output of a call of x is held as a draft before the model reads it again;
    once approved, the checkpoint's output (the approved draft, as its code returns it) is what it reads.
    `about(messages)` may add arguments found in the transcript by code (the order a reply is about).
    """

    name: str
    title: str
    pauses: str = BEFORE_FINAL_ANSWER
    about: Callable[[list[dict]], dict] | None = None

    def __post_init__(self):
        if self.pauses != BEFORE_FINAL_ANSWER and not (self.pauses.startswith(AFTER) and self.after_tool):
            raise ValueError(f"checkpoint {self.name}: pauses is {BEFORE_FINAL_ANSWER!r} or after_tool(name)")

    @property
    def after_tool(self) -> str:
        """The tool this checkpoint follows ("" for one before the final answer)."""
        return self.pauses.removeprefix(AFTER) if self.pauses.startswith(AFTER) else ""


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    system_prompt: str
    # The names of the tools this agent may call (forbidden ones are never offered, and refused).
    tools: tuple[str, ...] = field(default_factory=tuple)
    # Requests to try, shown on the New run page.
    examples: tuple[str, ...] = field(default_factory=tuple)
    # Named stages where the run pauses for a person, whatever the model decided (see Checkpoint).
    checkpoints: tuple[Checkpoint, ...] = field(default_factory=tuple)

    def final_answer_checkpoint(self) -> Checkpoint | None:
        return next((c for c in self.checkpoints if c.pauses == BEFORE_FINAL_ANSWER), None)


@dataclass(frozen=True)
class Starter:
    """Agents of another kind that runs are started with (agui/ adds its AG-UI agents): `choices()` lists them
    as (name, title), `start(name=..., request=..., requested_by=..., dry_run=...)` starts a run of one."""

    choices: Callable[[], list[tuple[str, str]]]
    start: Callable[..., "Run"]


class Registry:
    def __init__(self):
        self._agents: dict[str, Agent] = {}
        self.starters: list[Starter] = []

    def add_starter(self, starter: Starter) -> None:
        self.starters.append(starter)

    def starter_for(self, name: str) -> Starter | None:
        """The starter of the agent of this name, when it is not one of ours."""
        return next((s for s in self.starters if name in dict(s.choices())), None)

    def register(self, agent: Agent) -> Agent:
        """Add (or replace) an agent, and tell the tool registry which tools its runs may call
        (its checkpoints' tools too: the gate admits them only as checkpoints, never from the model)."""
        self._agents[agent.name] = agent
        tools.allow(agent=agent.name, tools=agent.tools + tuple(c.name for c in agent.checkpoints))
        return agent

    def get(self, name: str) -> Agent | None:
        return self._agents.get(name)

    def all(self) -> list[Agent]:
        return list(self._agents.values())

    def names(self) -> list[str]:
        """Every agent a run can be started with: ours and the starters'."""
        return sorted(set(self._agents) | {name for s in self.starters for name, _ in s.choices()})


registry = Registry()


def choices() -> list[tuple[str, str]]:
    return [(a.name, a.title) for a in registry.all()] + [c for s in registry.starters for c in s.choices()]
