"""A tool's question: the form generated from its JSON schema, the payload shown beside it, and the answer
read from the form and checked against the schema.

The schema is an object of flat fields (string, integer, number, boolean, or an enum of any of them), with
`required`, `title` and `description`; a schema that is one such field alone is answered with that value.
An enum is offered as radio buttons labelled from the payload's `labels` (value -> text) or from a `oneOf`
of `{"const": ..., "title": ...}`.
"""

from dataclasses import dataclass

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from approvals.lib import storable

SINGLE = "answer"  # the one field of a schema that is not an object


@dataclass(frozen=True)
class AnswerField:
    name: str
    label: str
    kind: str  # choice, boolean, integer, number, textarea, text
    value: str
    required: bool
    help: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # (value as posted, label)
    errors: tuple[str, ...] = ()

    @property
    def checked(self) -> bool:
        """A boolean field's box is ticked (its value as posted back, or its default)."""
        return self.value in ("true", "on")

    @property
    def numeric(self) -> bool:
        return self.kind in ("integer", "number")

    @property
    def step(self) -> str:
        """The number input's step: whole numbers for an integer."""
        return "1" if self.kind == "integer" else "any"


class AnswerInvalid(Exception):
    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in errors.items()))


def question_problem(question: dict) -> str:
    """What is wrong with a question a tool asks ("" when nothing): a prompt, a valid schema, storable JSON."""
    if not isinstance(question.get("prompt"), str) or not question["prompt"].strip():
        return "it has no prompt"
    schema = question.get("schema")
    if not isinstance(schema, dict):
        return "its answer schema is not a JSON object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its answer schema is invalid ({exc.message})"
    problems = storable.json_problems(question)
    return f"it cannot be stored ({problems})" if problems else ""


def _is_object(schema: dict) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _properties(schema: dict) -> tuple[dict, set]:
    if _is_object(schema):
        return schema.get("properties", {}), set(schema.get("required", ()))
    return {SINGLE: schema}, {SINGLE}


def _choices(prop: dict, labels: dict) -> tuple[tuple[str, str], ...]:
    if "enum" in prop:
        return tuple((_posted(v), str(labels.get(_posted(v), v))) for v in prop["enum"])
    options = [o for o in prop.get("oneOf", ()) if isinstance(o, dict) and "const" in o]
    return tuple((_posted(o["const"]), str(o.get("title", o["const"]))) for o in options)


def _kind(prop: dict) -> str:
    if "enum" in prop or prop.get("oneOf"):
        return "choice"
    kind = prop.get("type")
    if kind in ("boolean", "integer", "number"):
        return kind
    return "textarea" if prop.get("maxLength", 0) > 200 or prop.get("format") == "textarea" else "text"


def _posted(value) -> str:
    """A value as a form posts it back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def answer_fields(question: dict, values: dict | None = None, errors: dict | None = None) -> list[AnswerField]:
    """The form a reviewer answers with, generated from the question's schema; `values` as posted."""
    values, errors = values or {}, errors or {}
    payload = question.get("payload")
    payload = payload if isinstance(payload, dict) else {}
    labels = {str(k): v for k, v in (payload.get("labels") or {}).items()}
    properties, required = _properties(question.get("schema") or {})
    return [
        AnswerField(
            name=name,
            label=prop.get("title") or ("Answer" if name == SINGLE else name.replace("_", " ").capitalize()),
            kind=_kind(prop),
            value=str(values.get(name, _posted(prop.get("default")))),
            required=name in required,
            help=prop.get("description", ""),
            choices=_choices(prop, labels),
            errors=tuple(errors.get(name, ())),
        )
        for name, prop in properties.items()
        if isinstance(prop, dict)
    ]


def payload_table(question: dict) -> dict:
    """The payload to show: its `rows` as a table (`columns` in order, else the first row's keys), the rest
    as name/value pairs (labels are the form's, not shown twice)."""
    payload = question.get("payload")
    if not isinstance(payload, dict):
        return {"columns": [], "rows": [], "other": [("payload", payload)] if payload not in (None, "") else []}
    rows = [row for row in payload.get("rows") or () if isinstance(row, dict)]
    columns = list(payload.get("columns") or (rows[0].keys() if rows else ()))
    other = [(k, v) for k, v in payload.items() if k not in ("rows", "columns", "labels")]
    return {"columns": columns, "rows": [[row.get(c, "") for c in columns] for row in rows], "other": other}


def _typed(field: AnswerField, prop: dict, text: str | None):
    """A posted value as the schema's type; None when left empty (the schema reports a missing field)."""
    if field.kind == "boolean":
        return text in ("on", "true", "1")
    if text is None or text == "":
        return None
    if field.kind == "choice":
        options = list(prop.get("enum", ())) or [o["const"] for o in prop.get("oneOf", ()) if "const" in o]
        return next((option for option in options if _posted(option) == text), text)
    if field.kind == "integer":
        return int(text)
    if field.kind == "number":
        return float(text)
    return text


def parse_answer(question: dict, data) -> object:
    """The answer a reviewer posted (`answer_<field>` values), typed and checked against the question's schema.

    Raises AnswerInvalid with an error per field; what a schema that is not an object answers is the one value."""
    schema = question.get("schema") or {}
    properties, _ = _properties(schema)
    answer, errors = {}, {}
    for field in answer_fields(question):
        text = data.get(f"answer_{field.name}")
        try:
            value = _typed(field, properties[field.name], text)
        except ValueError:
            errors[field.name] = ["Enter a whole number." if field.kind == "integer" else "Enter a number."]
            continue
        if value is not None:
            answer[field.name] = value
    if errors:
        raise AnswerInvalid(errors)
    return validated_answer(question, answer if _is_object(schema) else answer.get(SINGLE))


def validated_answer(question: dict, answer) -> object:
    """The answer if the schema takes it; else AnswerInvalid, one message per field."""
    errors: dict[str, list[str]] = {}
    schema = question.get("schema") or {}
    whole = "__all__" if _is_object(schema) else SINGLE
    for error in Draft202012Validator(schema).iter_errors(answer):
        if error.validator == "required":
            missing = [name for name in error.validator_value if name not in (answer or {})]
            for name in missing:
                errors.setdefault(name, []).append("This field is required.")
            continue
        if error.validator == "additionalProperties":
            name = "__all__"
        else:
            name = str(error.absolute_path[0]) if error.absolute_path else whole
        errors.setdefault(name, []).append(_message(error))
    if errors:
        raise AnswerInvalid(errors)
    return answer


def _message(error) -> str:
    if error.validator == "enum":
        return "Choose one of the options."
    if error.validator == "type":
        return f"Enter a {error.validator_value}."
    return error.message[:1].upper() + error.message[1:] + "."
