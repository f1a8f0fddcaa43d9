"""The agents a run can be started with: a name, a prompt, and the tools it may use."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    system_prompt: str


SUPPORT = Agent(
    name="support",
    title="Support agent (demo shop)",
    system_prompt=(
        "You are a customer support agent for a small online shop. Use the tools to look up customers and "
        "orders, add notes, issue refunds and email customers. Refunds and emails are reviewed by a person; "
        "if a reviewer rejects or changes a call, follow their decision and do not retry the original."
    ),
)

AGENTS = {SUPPORT.name: SUPPORT}


def choices() -> list[tuple[str, str]]:
    return [(a.name, a.title) for a in AGENTS.values()]
