"""The agents a run can be started with: a name, a prompt, and the tools it may use.

Apps register their agents when Django starts (in AppConfig.ready(), see shop/agents.py):
`agents.agents.registry.register(Agent(...))`. A run's model is offered only its agent's
tools, and the gate treats any other tool as one that does not exist.
"""

from dataclasses import dataclass, field

from approvals.tools import registry as tools


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    system_prompt: str
    # The names of the tools this agent may call (forbidden ones are never offered, and refused).
    tools: tuple[str, ...] = field(default_factory=tuple)
    # Requests to try, shown on the New run page.
    examples: tuple[str, ...] = field(default_factory=tuple)


class Registry:
    def __init__(self):
        self._agents: dict[str, Agent] = {}

    def register(self, agent: Agent) -> Agent:
        """Add (or replace) an agent, and tell the tool registry which tools its runs may call."""
        self._agents[agent.name] = agent
        tools.allow(agent=agent.name, tools=agent.tools)
        return agent

    def get(self, name: str) -> Agent | None:
        return self._agents.get(name)

    def all(self) -> list[Agent]:
        return list(self._agents.values())

    def names(self) -> list[str]:
        return sorted(self._agents)


registry = Registry()


def choices() -> list[tuple[str, str]]:
    return [(a.name, a.title) for a in registry.all()]
