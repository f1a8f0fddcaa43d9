"""The mistakes a tool declares for practice calls: how to plant one in real arguments, and what it was."""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Planted:
    """Real arguments with one mistake planted: the arguments, and the mistake in the reviewer's words
    ("the refund was ten times the order total")."""

    arguments: dict
    explanation: str


@dataclass(frozen=True)
class Mistake:
    """One realistic mistake a tool's calls can carry.

    `plant(arguments)` returns the arguments with the mistake planted (Planted), or None when these
    arguments cannot carry it (no other customer's order to point at, say). `field` is the argument that
    carries it: an edit that changes it removes the mistake (the reviewer caught it)."""

    name: str
    label: str
    field: str
    plant: Callable[[dict], Planted | None]

    def removed_by(self, planted: dict, edited: dict | None) -> bool:
        """Whether an edit of the planted arguments takes the mistake out."""
        return edited is not None and edited.get(self.field) != planted.get(self.field)
