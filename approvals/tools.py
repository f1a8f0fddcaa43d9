"""Tool declarations and the registry.

A tool is a plain function plus a declaration. Apps that own tools (the demo
shop/, say) register them when Django starts, and say which agent may use which
(`registry.allow`); approvals/ reads the registry to validate, describe, gate,
search and execute calls.
"""

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from approvals.lib import storable
from approvals.lib.text import key_text

from .tiers import Tier

# What a reviewer may do with a call: approve it, edit and approve it, reject it with a reason, or
# reject it and tell the agent what to do instead. A tool may offer fewer (a remote agent declares which).
DecisionName = Literal["approve", "edit", "reject", "respond"]
DECISIONS: tuple[DecisionName, ...] = ("approve", "edit", "reject", "respond")

MASK = "***"

CALL, CHECKPOINT = "call", "checkpoint"  # a Tool's kind: the model calls it, or the loop holds a stage with it


class ToolError(Exception):
    """A tool refused to do what it was asked; the message goes to the model."""


class Ask(Exception):
    """A tool stops to ask a person (returned or raised by its function): `prompt`, the JSON schema of the answer
    (`schema`) and what to show beside it (`payload`: a `rows` list of objects is shown as a table, its `columns`
    in order; `labels` maps an enum's values to what the reviewer reads). The call waits as a question; the
    answer, checked against the schema, becomes the tool's output (Tool.answered)."""

    def __init__(self, prompt: str, schema: dict, payload: dict | None = None):
        super().__init__(prompt)
        self.prompt, self.schema, self.payload = prompt, schema, payload if payload is not None else {}

    def as_question(self) -> dict:
        return {"prompt": self.prompt, "schema": self.schema, "payload": self.payload}


@dataclass(frozen=True)
class ToolContext:
    idempotency_key: str
    run_id: int | None = None
    dry_run: bool = False
    # This call's execution was taken over after its worker stopped: an effect already stored
    # under the idempotency key is this same call's, finishing now, not an earlier duplicate.
    retaken: bool = False


@dataclass(frozen=True)
class Searchable:
    """A value of a call an auditor can find it by: argument or fact `key` (`source`).

    With a `pattern`, a search term that matches it whole is looked for as that value exactly, in each of
    `forms` ("as typed", "upper", "lower"): a containment query a GIN index answers on PostgreSQL. Without
    one, any other term is looked for as a part of the value, case-insensitively (a scan: keep it for names).
    """

    key: str
    source: str = "arguments"  # or "facts"
    pattern: str = ""
    forms: tuple[str, ...] = ("as typed",)
    label: str = ""  # for the search box's help: "an order number (A-1001)"

    def matches(self, term: str) -> bool:
        return bool(self.pattern) and re.fullmatch(self.pattern, term) is not None

    def values(self, term: str) -> list[str]:
        spelled = {"as typed": term, "upper": term.upper(), "lower": term.lower()}
        return list(dict.fromkeys(spelled[form] for form in self.forms))


class Arguments(Protocol):
    """A call's validated arguments: a pydantic model for our tools (remote/ has its own, a JSON object)."""

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


class ArgsSchema[A: Arguments](Protocol):
    """What validates a tool's arguments and gives their JSON Schema: a pydantic model class for our tools."""

    def model_json_schema(self) -> dict[str, Any]: ...

    def model_validate(self, obj: Any) -> A: ...


@dataclass(frozen=True)
class Tool[A: Arguments]:
    name: str
    description: str
    args_model: ArgsSchema[A]
    tier: str
    func: Callable[..., Any]
    describe: Callable[[A], str] | None = None
    facts: Callable[[A], dict] | None = None
    check: Callable[[A], str | None] | None = None
    simulate: Callable[[A], str] | None = None
    undo: Callable[..., Any] | None = None
    # Fact names whose change between proposal and execution means a person must look again.
    material_facts: tuple[str, ...] = field(default_factory=tuple)
    # Argument names whose values tell calls of this tool apart at a glance (an amount, an order, a
    # recipient): the columns of the reviewer's triage list and of the admin's call list.
    key_fields: tuple[str, ...] = field(default_factory=tuple)
    # Argument names whose values are amounts of money: shown as money ($490.00) wherever key fields are.
    money_fields: tuple[str, ...] = field(default_factory=tuple)
    # Which decisions reviewers are offered (and the services accept) for this tool's calls.
    decisions: tuple[str, ...] = DECISIONS
    # Fact names shown beside the key fields (the customer a refund goes to, say).
    key_facts: tuple[str, ...] = field(default_factory=tuple)
    # What an auditor can find this tool's calls by (an order number, an address, a customer's name).
    search_fields: tuple[Searchable, ...] = field(default_factory=tuple)
    # Argument names whose values are secrets: masked in logs and chat messages (never in the trail).
    sensitive_fields: tuple[str, ...] = field(default_factory=tuple)
    # Whether reviewers may approve or reject this tool's calls from a chat message (Slack's buttons).
    # Never for calls that need several approvals, whatever this says (access.can_decide_in_chat).
    chat_decisions: bool = False
    # Running it twice with the same idempotency key does no harm: a lapsed claim is released to be taken again,
    # instead of asking a person whether it ran.
    idempotent: bool = False
    # How a person's answer to this tool's question reads as its output (default: the answer as JSON).
    answered: Callable[[A, Any], str] | None = None
    # CHECKPOINT: a named stage of an agent's work (agents.agents.Checkpoint), never offered to the model.
    kind: str = CALL
    # The realistic mistakes a practice call of this tool may carry (practice.mistakes.Mistake), planted in a
    # copy of a real recent call to measure whether reviewers catch them (practice/).
    mistakes: tuple = field(default_factory=tuple)

    def masked(self, arguments):
        """The arguments with the sensitive fields' values replaced, for logs and chat."""
        if not isinstance(arguments, dict):
            return arguments
        return {name: MASK if name in self.sensitive_fields else value for name, value in arguments.items()}

    def key_values(self, arguments: dict | None) -> list[tuple[str, object]]:
        """This call's key fields as (name, value as shown) pairs, in declared order, those present only."""
        arguments = arguments if isinstance(arguments, dict) else {}
        present = [name for name in self.key_fields if name in arguments]
        return [(name, key_text(arguments[name], is_money=name in self.money_fields)) for name in present]

    def key_facts_values(self, facts: dict | None) -> list[tuple[str, object]]:
        """This call's key facts as (name, value) pairs, in declared order, those present only."""
        facts = facts if isinstance(facts, dict) else {}
        return [(name, facts[name]) for name in self.key_facts if name in facts]

    def openai_spec(self) -> dict:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }

    def parse(self, arguments) -> A:
        """Validate arguments (a dict or a JSON string); raises ArgumentsInvalid."""
        arguments = arguments_object(arguments)
        try:
            return self.args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ArgumentsInvalid(field_errors(exc))

    def normalize(self, arguments) -> dict:
        """The validated arguments as plain JSON values."""
        return self.parse(arguments).model_dump(mode="json")

    def draft_problem(self, args: A) -> str:
        """What the tool's own draft check says is wrong with these arguments ("" when nothing is)."""
        try:
            return (self.check(args) if self.check else None) or ""
        except Exception as exc:
            return f"the draft check could not run ({exc})"

    def render_description(self, args: A) -> str:
        if self.describe is None:
            return f"Call {self.name} with " + ", ".join(f"{k}={v!r}" for k, v in args.model_dump(mode="json").items())
        return self.describe(args)

    def fetch_facts(self, args: A) -> dict:
        return self.facts(args) if self.facts else {}

    def preview(self, args: A) -> str:
        """What the call would do, written nowhere: the tool's simulate(), or its description."""
        if self.simulate is None:
            return f"[dry run] {self.render_description(args)} (nothing was written)"
        return self.simulate(args)

    def run(self, args: A, context: ToolContext) -> str:
        if context.dry_run and self.tier != Tier.READ_ONLY:
            return self.preview(args)
        result = self.func(args, context)
        if isinstance(result, Ask):
            raise result  # the call becomes a question (services/questions.py)
        return str(result)

    def answer_output(self, args: A | None, answer) -> str:
        """The output the model reads for a person's answer to this tool's question."""
        if self.answered is not None and args is not None:
            return str(self.answered(args, answer))
        return answer_json(answer)


def answer_json(answer) -> str:
    """A person's answer to a tool's question as the model reads it by default."""
    return json.dumps({"answer": answer}, ensure_ascii=False)


def arguments_object(arguments) -> dict:
    """Arguments (a dict or a JSON string) as a JSON object the database can store; raises ArgumentsInvalid."""
    if isinstance(arguments, str):
        try:
            arguments = storable.load_json(arguments) if arguments.strip() else {}
        except storable.Unreadable as exc:
            raise ArgumentsInvalid({"__all__": [f"Arguments are not valid JSON: {exc}."]})
    if not isinstance(arguments, dict):
        raise ArgumentsInvalid({"__all__": ["Arguments must be a JSON object."]})
    problems = storable.json_problems(arguments)
    if problems:
        raise ArgumentsInvalid(problems)
    return arguments


class ArgumentsInvalid(Exception):
    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__(self.message())

    def message(self) -> str:
        parts = []
        for name, messages in self.errors.items():
            label = "arguments" if name == "__all__" else name
            parts.append(f"{label}: {' '.join(messages)}")
        return "; ".join(parts)


def field_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        name = ".".join(loc) if loc else "__all__"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "Unknown field."
        elif error["type"] == "missing":
            message = "This field is required."
        errors.setdefault(name, []).append(message)
    return errors


class Registry:
    """The tools, and which of them each agent may call (an agent nobody declared may call none). A run advanced
    elsewhere may get its calls' tools from its advancer instead (approvals/advancers.py: a remote agent's are its
    declarations, never these tools)."""

    def __init__(self):
        self._tools: dict[str, Tool] = {}
        self._allowed: dict[str, tuple[str, ...]] = {}
        self._specs: dict[tuple[int, ...], list[dict]] = {}
        self._catalogs: list[Callable[[], Iterable[Tool]]] = []

    def for_call(self, call) -> Tool | None:
        """The tool of this call: a registered tool, unless the run's advancer has tools of its own (for a call the
        gate has just admitted, the tool it admitted it under: nobody is asked again). One the advancer read is kept
        on the call: a decision asks for it three times, and its audit event's log line once more after the commit."""
        resolved = getattr(call, "resolved_tool", None)
        if resolved is not None:
            return resolved
        source = call.run.advancer.tool_for_call
        if source is None:
            return self.get(call.tool_name)
        call.resolved_tool = source(call)  # a call's own tool (a remote call's declaration version) never changes
        return call.resolved_tool

    def resolve(self, calls: list) -> None:
        """for_call() made ready for each of these calls: each advancer that can resolves its runs' calls together
        (Advancer.resolve_tools); for_call() then reads nothing for them."""
        by_advancer: dict = {}
        for call in calls:
            if getattr(call, "resolved_tool", None) is None and call.run.advancer.resolve_tools is not None:
                by_advancer.setdefault(call.run.advancer.resolve_tools, []).append(call)
        for resolve_tools, theirs in by_advancer.items():
            resolve_tools(theirs)

    def add_catalog(self, catalog: Callable[[], Iterable[Tool]]) -> None:
        """catalog() -> the current tools declared elsewhere (a remote agent's), for choosing in rules and settings."""
        self._catalogs.append(catalog)

    def declared(self) -> list[Tool]:
        """Every tool a rule or a setting may name: ours, and those declared elsewhere."""
        return self.all() + [tool for catalog in self._catalogs for tool in catalog()]

    def named(self, name: str) -> Tool | None:
        return self.get(name) or next((tool for tool in self.declared() if tool.name == name), None)

    def register(self, tool: Tool) -> Tool:
        self._tools[tool.name] = tool
        return tool

    def allow(self, *, agent: str, tools: Iterable[str]) -> None:
        """The tools `agent`'s runs may call, by name; replaces what it was allowed before."""
        self._allowed[agent] = tuple(tools)

    def allowed(self, agent: str) -> tuple[str, ...]:
        return self._allowed.get(agent, ())

    def get(self, name: str, *, agent: str | None = None) -> Tool | None:
        """The tool of this name; with `agent`, only if that agent may call it."""
        if agent is not None and name not in self.allowed(agent):
            return None
        return self._tools.get(name)

    def all(self, *, agent: str | None = None) -> list[Tool]:
        if agent is None:
            return list(self._tools.values())
        return [self._tools[name] for name in self.allowed(agent) if name in self._tools]

    def offered(self, *, agent: str | None = None) -> list[Tool]:
        """What a model may be offered: forbidden tools never are."""
        return [tool for tool in self.all(agent=agent) if tool.tier != Tier.FORBIDDEN and tool.kind != CHECKPOINT]

    def openai_specs(self, *, agent: str | None = None) -> list[dict]:
        """Specs for the model (of `agent`'s tools, if given): forbidden tools are never offered. Built once per
        set of tools (not per turn: a JSON schema costs pydantic milliseconds); callers must not change them."""
        offered = self.offered(agent=agent)
        key = tuple(id(tool) for tool in offered)
        if key not in self._specs:
            self._specs[key] = [tool.openai_spec() for tool in offered]
        return self._specs[key]

    def searchables(self) -> list[Searchable]:
        """Every tool's search fields, each once."""
        return list(dict.fromkeys(s for tool in self._tools.values() for s in tool.search_fields))


registry = Registry()


def offered_decisions(call) -> tuple[str, ...]:
    """The decisions reviewers are offered on a call: all four for ReviewHub's own tools, those a remote agent's
    tool declares for its calls (a call whose tool is gone: reject only)."""
    if call.run.advancer.tool_for_call is None:
        return DECISIONS
    tool = registry.for_call(call)
    return tool.decisions if tool is not None else ("reject",)
