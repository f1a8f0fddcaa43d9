"""A remote agent's declared tool as approvals sees a tool: the same interface as approvals.tools.Tool.

Arguments are checked against the declared JSON Schema (the `jsonschema` package) and the storable
rules; the description is rendered by our code from the declared template and the real arguments;
there are no facts of ours to fetch and no function to run (the agent executes its own calls).
"""

import json
import string
from dataclasses import dataclass, replace
from functools import lru_cache

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from approvals.models import ToolCall
from approvals.tools import CHECKPOINT, ArgumentsInvalid, Tool

from .models import DeclaredTool, RemoteCall, Thread


class JsonArguments(dict):
    """Validated arguments; model_dump() like a pydantic model's, so approvals' code reads them alike."""

    def model_dump(self, mode: str = "python") -> dict:
        return json.loads(json.dumps(self))


@dataclass(frozen=True, eq=False)
class DeclaredSchema:
    """Stands where a pydantic model stands for ReviewHub's own tools: the edit form reads its JSON Schema. Like a
    model class, it is one object per declaration (a version's adapter is kept, _cached) and hashes as itself:
    caches keyed by a tool's model (approvals/web/triage.py's amount field) take it as they take a class."""

    schema: dict

    def model_json_schema(self) -> dict:
        return self.schema

    def model_validate(self, obj: dict) -> JsonArguments:
        """The arguments (a JSON object) checked against the declared schema; raises ArgumentsInvalid."""
        errors = _field_errors(validators.validator_for(self.schema)(self.schema), obj)
        if errors:
            raise ArgumentsInvalid(errors)
        return JsonArguments(obj)


def schema_problem(schema: dict) -> str:
    """Why a declared input schema cannot be used ("" when it can)."""
    if schema.get("type") != "object":
        return 'The input schema must describe an object ("type": "object").'
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"Not a valid JSON Schema: {exc.message}"
    return ""


def template_problem(template: str) -> str:
    """Only plain {name} fields: no attribute or index access, conversions or format specs."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"Not a valid template: {exc}."
    for _literal, field, spec, conversion in parts:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            return f"Only plain fields such as {{order_id}} are allowed, not {{{shown}}}."
    return ""


def _template_value(value) -> str:
    """A value as the description shows it: text as is, a whole float as the integer it is (49, not 49.0)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, ensure_ascii=False)


def render_template(template: str, arguments: dict) -> str:
    out = []
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        out.append(literal)
        if field is not None:
            out.append(_template_value(arguments.get(field, "")))
    return "".join(out)


def _field_errors(validator, arguments: dict) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in validator.iter_errors(arguments):
        path = ".".join(str(part) for part in error.absolute_path)
        instance = error.instance if isinstance(error.instance, dict) else {}
        if error.validator == "required":
            names = [f"{path}.{name}" if path else name for name in error.validator_value if name not in instance]
            for name in names:
                errors.setdefault(name, []).append("This field is required.")
        elif error.validator == "additionalProperties" and error.validator_value is False:
            known = set(error.schema.get("properties", {}))
            for name in sorted(set(instance) - known):
                errors.setdefault(f"{path}.{name}" if path else name, []).append("Unknown field.")
        else:
            errors.setdefault(path or "__all__", []).append(error.message)
    return errors


def _executed_by_the_agent(*args, **kwargs):
    raise RuntimeError("A remote agent's call is executed by the agent, never by ReviewHub.")


@dataclass(frozen=True)
class DeclaredToolAdapter(Tool[JsonArguments]):
    schema: dict | None = None
    template: str = ""

    def normalize(self, arguments) -> dict:
        return self.parse(arguments).model_dump()

    def openai_spec(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.schema},
        }

    def render_description(self, args) -> str:
        arguments = args.model_dump()
        if not self.template:
            return f"Call {self.name} with " + ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        return render_template(self.template, arguments)

    def fetch_facts(self, args) -> dict:
        return {}  # the agent's own facts are stored apart (ToolCall.agent_facts), never mixed with ours

    def preview(self, args) -> str:
        return f"[dry run] {self.render_description(args)} (the agent executes this call; nothing was written here)"

    def run(self, args, context):
        return _executed_by_the_agent(args, context)


@lru_cache(maxsize=2048)
def _cached(tool_pk: int, created_at) -> DeclaredToolAdapter:
    return adapter_for(DeclaredTool.objects.select_related("agent").get(pk=tool_pk))


def _adapter(tool_pk: int) -> DeclaredToolAdapter:
    """Versions never change once stored, so one adapter per version is kept (keyed by when it was stored too)."""
    created_at = DeclaredTool.objects.filter(pk=tool_pk).values_list("created_at", flat=True).first()
    return _cached(tool_pk, created_at)


def adapter_for(tool: DeclaredTool) -> DeclaredToolAdapter:
    return DeclaredToolAdapter(
        name=tool.qualified_name,
        description=tool.description,
        args_model=DeclaredSchema(tool.input_schema),
        tier=tool.tier,
        func=_executed_by_the_agent,
        key_fields=tuple(tool.key_fields),
        decisions=tuple(tool.decisions),
        idempotent=tool.idempotent,
        schema=tool.input_schema,
        template=tool.description_template,
    )


def tool_for_call(call) -> DeclaredToolAdapter | None:
    """The declaration a remote call was proposed under (as a checkpoint, for a call of that kind)."""
    tool = _declared_for_call(call)
    if tool is not None and call.kind == ToolCall.Kind.CHECKPOINT:
        return replace(tool, kind=CHECKPOINT)
    return tool


def resolve_tools(calls: list) -> None:
    """tool_for_call() for these calls in one query: each proposed under a declaration gets it as its
    resolved_tool (the registry's for_call() then reads nothing); the others are left to tool_for_call()."""
    wanted = {call.pk: call for call in calls if call.pk is not None and call.kind != ToolCall.Kind.TURN}
    found = RemoteCall.objects.filter(tool_call_id__in=wanted, tool__isnull=False)
    for call_id, tool_pk, created_at in found.values_list("tool_call_id", "tool_id", "tool__created_at"):
        call, tool = wanted[call_id], _cached(tool_pk, created_at)
        call.resolved_tool = replace(tool, kind=CHECKPOINT) if call.kind == ToolCall.Kind.CHECKPOINT else tool


def proposed_tool(tool: DeclaredTool, kind: str) -> DeclaredToolAdapter:
    """The declaration a call is being proposed under, as the gate admits it (as a checkpoint, for a call of that
    kind), built from the row the proposal read: the gate does not look it up again."""
    adapter = adapter_for(tool)
    return replace(adapter, kind=CHECKPOINT) if kind == ToolCall.Kind.CHECKPOINT else adapter


def draft_problem(tool: DeclaredTool) -> str:
    """Why this declared tool cannot be asked for as a checkpoint ("" when it can): it must take a draft."""
    properties = tool.input_schema.get("properties") or {}
    if (properties.get("draft") or {}).get("type") != "string" or "draft" not in tool.input_schema.get("required", []):
        return f'{tool.name} cannot be a checkpoint: its input schema must require a string "draft".'
    return ""


def _declared_for_call(call) -> DeclaredToolAdapter | None:
    """The declaration a remote call was proposed under; while it is being proposed, the agent's current one."""
    if call.kind == ToolCall.Kind.TURN:
        return None  # a model turn the agent asked to have reviewed: no tool
    if call.pk is not None:
        found = RemoteCall.objects.filter(tool_call_id=call.pk).values_list("tool_id", "tool__created_at").first()
        if found is not None:
            return _cached(*found) if found[0] is not None else None  # a model turn: no tool
    thread = Thread.objects.filter(run_id=call.run_id).select_related("agent").first()
    if thread is None:
        return None
    agent_name, _, name = call.tool_name.partition(".")
    if agent_name != thread.agent.name:
        return None
    tool_pk = (
        DeclaredTool.objects.filter(agent=thread.agent, name=name, current=True).values_list("pk", flat=True).first()
    )
    return _adapter(tool_pk) if tool_pk is not None else None


def current_tools() -> list[DeclaredToolAdapter]:
    """Every agent's current declarations, as tools (the admin's rules and settings offer them by name)."""
    tools = DeclaredTool.objects.filter(current=True).select_related("agent").order_by("agent__name", "name")
    return [_cached(tool.pk, tool.created_at) for tool in tools]
