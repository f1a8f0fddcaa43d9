"""The edit form, generated from the tool's argument schema."""

from dataclasses import dataclass

from django.utils.html import format_html, format_html_join

from approvals.lib import storable
from approvals.services import EditInvalid
from approvals.tools import Tool


@dataclass
class FieldSpec:
    name: str
    label: str
    kind: str  # number, integer, text, textarea, choice, boolean
    value: object
    required: bool
    help: str = ""
    choices: tuple = ()
    minimum: object = None
    maximum: object = None
    step: str = ""
    errors: tuple = ()

    @property
    def number_attrs(self) -> str:
        """A number input's step, bounds (when the schema has them) and required, as escaped attributes."""
        bounds = [(name, value) for name, value in (("min", self.minimum), ("max", self.maximum)) if value is not None]
        attrs = format_html_join("", ' {}="{}"', [("step", self.step), *bounds])
        return format_html("{}{}", attrs, " required" if self.required else "")


def _kind(prop: dict) -> str:
    if "enum" in prop:
        return "choice"
    kind = prop.get("type")
    if kind == "number":
        return "number"
    if kind == "integer":
        return "integer"
    if kind == "boolean":
        return "boolean"
    if prop.get("maxLength", 0) > 200:
        return "textarea"
    return "text"


def edit_fields(tool: Tool, values: dict, errors: dict | None = None) -> list[FieldSpec]:
    schema = tool.args_model.model_json_schema()
    required = set(schema.get("required", []))
    errors = errors or {}
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kind = _kind(prop)
        fields.append(
            FieldSpec(
                name=name,
                label=prop.get("title") or name.replace("_", " ").capitalize(),
                kind=kind,
                value=values.get(name, ""),
                required=name in required,
                help=prop.get("description", ""),
                choices=tuple(prop.get("enum", ())),
                minimum=prop.get("minimum", prop.get("exclusiveMinimum")),
                maximum=prop.get("maximum", prop.get("exclusiveMaximum")),
                step="0.01" if kind == "number" else "1",
                errors=tuple(errors.get(name, ())),
            )
        )
    return fields


def parse_edit(tool: Tool, data) -> dict:
    """Turn posted form values into typed arguments. Raises EditInvalid per field.

    A raw JSON object in "arguments_json" takes precedence (for reviewers who
    prefer editing JSON); the schema then checks it like any other edit.
    """
    raw = (data.get("arguments_json") or "").strip()
    if raw:
        return _parse_json_object(raw)
    properties = tool.args_model.model_json_schema().get("properties", {})
    arguments = {}
    errors = {key[4:]: ["Unknown field."] for key in data if key.startswith("arg_") and key[4:] not in properties}
    for name, prop in properties.items():
        try:
            value = _field_value(_kind(prop), data.get(f"arg_{name}"))
        except ValueError:
            errors[name] = ["Enter a whole number." if _kind(prop) == "integer" else "Enter a number."]
            continue
        if value is not None:
            arguments[name] = value
    if errors:
        raise EditInvalid(errors)
    return arguments


def _parse_json_object(raw: str) -> dict:
    try:
        value = storable.load_json(raw)
    except storable.Unreadable as exc:
        raise EditInvalid({"arguments_json": [f"Not valid JSON: {exc}."]})
    if not isinstance(value, dict):
        raise EditInvalid({"arguments_json": ["Arguments must be a JSON object."]})
    return value


def _number(text: str) -> int | float:
    """A number field's text: 49 stays the integer 49 (not 49.0), 49.5 is a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _field_value(kind: str, text: str | None):
    """A form field's text as the schema's type; None when left empty (the schema reports missing fields)."""
    if kind == "boolean":
        return text in ("on", "true", "1")
    if text is None or text == "":
        return None
    if kind == "number":
        return _number(text)
    if kind == "integer":
        return int(text)
    return text.replace("\r\n", "\n")  # a browser sends a textarea's line breaks as CRLF: not an edit
