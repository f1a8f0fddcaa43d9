"""Who advances a run (DESIGN.md rule 14): one seam the core asks instead of branching on `Run.advanced_by`.

An advancer is the runtime that takes a run further after a start or a decision: ReviewHub's agent runtime
(agents/), a remote agent (remote/: the agent API, and the MCP gateway, which proposes as a remote agent) or an
AG-UI agent (agui/). Each registers one `Advancer` from its AppConfig.ready(), under the `Run.advanced_by` value of
its runs; the core reads its capabilities through `run.advancer`. A run whose advancer is not registered gets
`NOBODY`: it is never resumed, and nothing of it is executed (fail closed).

This module imports nothing of approvals/, so the models can ask it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


def _never(call: Any) -> bool:
    return False


def _no_tool(call: Any) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class Advancer:
    name: str  # the Run.advanced_by value of its runs
    # The setting naming resume(run_id, *, approved=False), called after the commit of whatever lets the run go on.
    resume: str
    starts_runs: bool  # run_create asks it to take a new run further (a remote agent is already running it)
    # ReviewHub calls the model for its runs: turn rules and checkpoints apply, an expired turn fails the run,
    # and the sweep takes over a turn or an approved call that stopped.
    calls_model: bool
    # It hears of every change to its runs' calls (cancelled, outcome unknown, an expired turn), not only of the
    # decisions that let a run go on: its agent learns them from it (long-polls, webhooks, the next input).
    told_of_changes: bool
    agent_facts: bool  # the facts on its calls are what the agent's own code fetched, shown as the agent's
    reports_results: bool  # its agent executes approved calls and reports each: the sweep flags one it never did
    executes: Callable[[Any], bool] = _never  # executes(call): whether ReviewHub runs this approved call itself
    # tool_for_call(call): the tool of a call of its runs; None: ReviewHub's registry (as the run's agent may call).
    tool_for_call: Callable[[Any], Any] | None = None
    # resolve_tools(calls): tool_for_call() for many calls of its runs at once, each found set as its resolved_tool
    # (a page or a push showing a list of calls reads their tools in one query, not one per call).
    resolve_tools: Callable[[list], None] | None = None
    # outbox(run_id, decided): called inside the transaction that lets one of its runs go on (a decision, an
    # expiry, a cancel), before its resume: what tells its agent and must commit with the change (a remote agent's
    # webhook deliveries), so a process lost right after the commit loses none of it and the sending starts at the
    # commit. `decided`: the call that transaction decided, if one was (None: a cancel, a lease, a re-check).
    outbox: Callable[[int, int | None], Any] | None = None
    note: str = ""  # what the run page says of its runs

    def resumer(self) -> Callable[..., None]:
        """The callable that resumes its runs (read from settings each time, so a test or a deployment can swap it)."""
        return import_string(getattr(settings, self.resume)) if self.resume else _resume_nothing


def _resume_nothing(run_id: int, *, approved: bool = False) -> None:
    return None


NOBODY = Advancer(
    name="",
    resume="",
    starts_runs=False,
    calls_model=False,
    told_of_changes=False,
    agent_facts=True,
    reports_results=False,
    tool_for_call=_no_tool,
    note="advanced by a runtime that is not installed: nothing of it runs here",
)

_advancers: dict[str, Advancer] = {}


def register(advancer: Advancer) -> Advancer:
    """Called from an AppConfig.ready(); registering a name again replaces its advancer."""
    _advancers[advancer.name] = advancer
    return advancer


def unregister(name: str) -> None:
    _advancers.pop(name, None)


def advancer_for(advanced_by: str) -> Advancer:
    return _advancers.get(advanced_by, NOBODY)


def names(**capabilities: bool) -> list[str]:
    """The advanced_by values of the registered advancers with these capabilities, for queries over many runs:
    names(calls_model=True)."""
    return [
        name
        for name, advancer in _advancers.items()
        if all(getattr(advancer, key) == value for key, value in capabilities.items())
    ]
