"""A tool's question: the form generated from its answer schema, and the answer read and checked against it."""

import pytest
from django.http import QueryDict

from approvals.kinds.question import AnswerInvalid, answer_fields, parse_answer, payload_table, question_problem

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "title": "Order", "enum": ["A-1001", "A-1005"], "description": "Which one."},
        "note": {"type": "string", "maxLength": 500},
        "items": {"type": "integer", "minimum": 1},
        "amount": {"type": "number"},
        "urgent": {"type": "boolean", "title": "Urgent?"},
    },
    "required": ["order_id", "items"],
    "additionalProperties": False,
}
PAYLOAD = {
    "customer": "Dana Smith",
    "rows": [{"order": "A-1001", "total": "$49.00"}, {"order": "A-1005", "total": "$23.00"}],
    "labels": {"A-1001": "A-1001 · teapot", "A-1005": "A-1005 · tea sampler"},
}
QUESTION = {"prompt": "Which order?", "schema": SCHEMA, "payload": PAYLOAD}


def posted(**values) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in values.items():
        data[f"answer_{name}"] = value
    return data


def test_the_form_has_a_field_per_property_of_the_kind_its_type_asks_for():
    fields = {f.name: f for f in answer_fields(QUESTION)}
    assert [(f.name, f.kind, f.required) for f in fields.values()] == [
        ("order_id", "choice", True),
        ("note", "textarea", False),
        ("items", "integer", True),
        ("amount", "number", False),
        ("urgent", "boolean", False),
    ]
    assert fields["order_id"].label == "Order" and fields["order_id"].help == "Which one."
    assert fields["urgent"].label == "Urgent?" and fields["amount"].label == "Amount"


def test_an_enum_is_offered_with_the_payloads_labels_or_its_own_values():
    choice = answer_fields(QUESTION)[0]
    assert choice.choices == (("A-1001", "A-1001 · teapot"), ("A-1005", "A-1005 · tea sampler"))
    unlabelled = answer_fields({"schema": SCHEMA, "payload": {}})[0]
    assert unlabelled.choices == (("A-1001", "A-1001"), ("A-1005", "A-1005"))


def test_a_one_of_of_constants_is_a_choice_labelled_by_their_titles():
    schema = {"oneOf": [{"const": 1, "title": "One"}, {"const": 2, "title": "Two"}]}
    (field,) = answer_fields({"schema": schema})
    assert (field.name, field.kind, field.choices) == ("answer", "choice", (("1", "One"), ("2", "Two")))
    assert parse_answer({"schema": schema}, posted(answer="2")) == 2


def test_a_posted_answer_is_typed_by_the_schema():
    answer = parse_answer(QUESTION, posted(order_id="A-1005", items="2", amount="3.5", urgent="on", note=""))
    assert answer == {"order_id": "A-1005", "items": 2, "amount": 3.5, "urgent": True}


@pytest.mark.parametrize(
    "values, errors",
    [
        ({"order_id": "A-9999", "items": "1"}, {"order_id": ["Choose one of the options."]}),
        ({"order_id": "A-1001", "items": "two"}, {"items": ["Enter a whole number."]}),
        ({"order_id": "A-1001", "items": "0"}, {"items": ["0 is less than the minimum of 1."]}),
        ({"items": "1"}, {"order_id": ["This field is required."]}),
    ],
)
def test_a_wrong_answer_gets_an_error_on_its_field(values, errors):
    with pytest.raises(AnswerInvalid) as raised:
        parse_answer(QUESTION, posted(**values))
    assert raised.value.errors == errors


def test_a_schema_that_is_not_an_object_is_answered_with_its_one_value():
    question = {"schema": {"type": "integer", "maximum": 3}}
    assert parse_answer(question, posted(answer="3")) == 3
    with pytest.raises(AnswerInvalid) as raised:
        parse_answer(question, posted(answer="4"))
    assert list(raised.value.errors) == ["answer"]


def test_the_payload_shows_its_rows_as_a_table_and_the_rest_as_pairs():
    table = payload_table(QUESTION)
    assert table["columns"] == ["order", "total"]
    assert table["rows"] == [["A-1001", "$49.00"], ["A-1005", "$23.00"]]
    assert table["other"] == [("customer", "Dana Smith")]


def test_a_question_without_a_prompt_or_with_a_broken_schema_cannot_be_asked():
    assert question_problem(QUESTION) == ""
    assert question_problem({**QUESTION, "prompt": " "}) == "it has no prompt"
    assert "schema is invalid" in question_problem({**QUESTION, "schema": {"type": "nonsense"}})
    assert "cannot be stored" in question_problem({**QUESTION, "payload": {"x": "\x00"}})
