"""Strategies for tests/approvals/test_fuzz.py: what a careless user, an attacker or a confused model might send."""

import json
from urllib.parse import quote

from hypothesis import strategies as st

from approvals.services import ProposedCall
from approvals.tools import registry


def mostly(usual: st.SearchStrategy, other: st.SearchStrategy, weight: int = 5) -> st.SearchStrategy:
    """`usual` `weight` times out of `weight + 1`: enough valid input to reach the deeper code."""
    return st.integers(0, weight).flatmap(lambda i: other if i == 0 else usual)


# Any character, lone surrogates included: JSON carries them as \u escapes, a model's reply as is.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
# What a form or a URL can carry: any character but a lone surrogate (it has no UTF-8 form).
FORM_TEXT = st.text(max_size=40)
NASTY = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "nan",
        "NaN",
        "inf",
        "-Infinity",
        "1e999",
        "9" * 5000,
        "99999999999999999999999",
        "-0",
        "0.001",
        "²",
        "٣",
        "A-١٠٠١",
        "A-1001\n",
        "A-1001\r\nBcc: x@evil.example",
        "\u202eevil",
        "[" * 100_000,
        "{",
        "{}",
        "[]",
        "null",
        '{"amount": ' + "9" * 5000 + "}",
        '{"amount": 1e999}',
        "x" * 5000,
        "%00",
        "' OR 1=1 --",
        "<script>alert(1)</script>",
        "2026-02-30",
        "0001-01-01",
        "9999-12-31 23:59:59",
        "2026-01-01T00:00:00+14:00",
    ]
)
FORM_VALUES = FORM_TEXT | NASTY

NUMBERS = st.integers() | st.floats() | st.sampled_from([0, 0.01, 7.5, 20, 40, 49, 49.01, 100000, 100000.01, 10**30])
ORDER_IDS = mostly(st.sampled_from(["A-1001", "A-1002", "A-1003", "A-1004"]), st.from_regex(r"\AA-\d{4}\Z"))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)
# Each field any demo tool has: values its schema takes (often), values near them, and anything at all.
GOOD = {
    "order_id": mostly(ORDER_IDS, FORM_VALUES),
    "amount": mostly(st.sampled_from([7.5, 12.5, 20, 35, 40, 49]), NUMBERS),
    "reason": mostly(st.sampled_from(["Item arrived damaged", "Only the shipping"]), FORM_VALUES),
    "query": mostly(st.sampled_from(["Dana", "dana.smith@example.com"]), FORM_VALUES),
    "text": mostly(st.sampled_from(["Customer called back."]), ANY_TEXT),
    "to": mostly(st.sampled_from(["dana.smith@example.com", "dana.smith@gmail.co"]), st.emails() | ANY_TEXT),
    "subject": mostly(st.sampled_from(["Your refund"]), FORM_VALUES),
    "body": mostly(st.sampled_from(["Hello Dana, your refund is on its way."]), ANY_TEXT),
    "customer_id": NUMBERS,
    "email": mostly(st.sampled_from(["dana.smith@example.com", "lee.wong@example.com"]), st.emails() | ANY_TEXT),
    "draft": mostly(st.sampled_from(["Hi Dana, your refund is on its way."]), ANY_TEXT),  # a checkpoint's
}
FIELD_VALUES = {name: mostly(strategy, JSON_VALUES) for name, strategy in GOOD.items()}
ARGUMENTS = st.fixed_dictionaries({}, optional={**FIELD_VALUES, "to_card": JSON_VALUES})


def arguments_for(tool_name: str) -> st.SearchStrategy[dict]:
    """The tool's own fields, each usually present and often valid; sometimes a field too many."""
    tool = registry.get(tool_name)
    names = list(tool.args_model.model_fields) if tool else []
    fields = st.fixed_dictionaries({name: FIELD_VALUES[name] for name in names})
    return mostly(fields, ARGUMENTS | st.builds(lambda a, b: {**a, **b}, fields, ARGUMENTS))


JSON_TEXT = ARGUMENTS.map(json.dumps) | JSON_VALUES.map(json.dumps) | FORM_VALUES

EDIT_BASE = st.fixed_dictionaries(
    {
        "arg_order_id": GOOD["order_id"],
        "arg_amount": mostly(GOOD["amount"].map(str), FORM_VALUES),
        "arg_reason": GOOD["reason"],
    }
)
EDIT_EXTRAS = st.fixed_dictionaries(
    {},
    optional={"arg_to_card": FORM_VALUES, "arguments_json": arguments_for("issue_refund").map(json.dumps) | JSON_TEXT},
)
EDIT_FORMS = mostly(EDIT_BASE, st.builds(lambda base, extras: {**base, **extras}, EDIT_BASE, EDIT_EXTRAS), weight=2)
ANSWER_FORMS = st.fixed_dictionaries(
    {"answer_order_id": mostly(st.sampled_from(["A-1001", "A-1005"]), FORM_VALUES)},
    optional={"answer_other": FORM_VALUES, "reason": FORM_VALUES},
)
HASHES = mostly(st.just("shown"), st.sampled_from(["", "stale"]) | FORM_TEXT, weight=5)

# Path segments: the real ids (filled in by the test), numbers of any size, and any text, escaped.
PATH_PARTS = mostly(
    st.just("real"),
    st.sampled_from(["", "0", "-1", "1.5", "abc", str(2**63), "9" * 5000])
    | st.integers(min_value=0, max_value=2**70).map(str)
    | FORM_TEXT.map(lambda text: quote(text, safe="")),
    weight=2,
)
UNDO_SHAPES = mostly(
    st.just("/runs/{run}/calls/{call}/undo/"), st.sampled_from(["/runs/{run}/action/", "/runs/{run}/undo/"])
)
UNDO_FORMS = st.fixed_dictionaries({}, optional={"call": FORM_VALUES, "action": st.sampled_from(["undo", "retry"])})

ADMIN_MODELS = ["run", "toolcall", "decision", "message", "auditevent", "policyrule", "toolsetting", "shadowresult"]
ADMIN_PAGES = (
    st.sampled_from([f"{model}/" for model in ADMIN_MODELS])
    | st.sampled_from(["auditevent/export.csv", "auditevent/export.jsonl", "auditevent/export.{id}"])
    | st.sampled_from([f"{model}/{{id}}/change/" for model in ADMIN_MODELS])
)
FILTER_NAMES = [
    "tool",
    "status",
    "tier",
    "kind",
    "outcome",
    "reviewer",
    "actor",
    "verdict",
    "final",
    "role",
    "q",
    "o",
    "p",
    "e",
    "created_at__gte",
    "created_at__lt",
    "tool_name",
    "rule",
    "agreed",
    "enabled",
    "shadow",
]
ADMIN_PARAMS = st.dictionaries(
    st.sampled_from(FILTER_NAMES) | FORM_TEXT,
    FORM_VALUES | st.dates().map(str) | st.datetimes().map(str),
    max_size=4,
)

MODEL_TEXT = ANY_TEXT | FORM_VALUES
TOOL_NAMES = st.sampled_from([tool.name for tool in registry.all()])
ODD_NAMES = st.sampled_from(["", "x" * 201, "issue_refund\x00", "issue_refund "]) | ANY_TEXT


@st.composite
def proposed_calls(draw) -> ProposedCall:
    """One call as a model might send it: mostly a real tool with arguments near its schema."""
    name = draw(mostly(TOOL_NAMES, ODD_NAMES))
    raw = draw(mostly(arguments_for(name).map(json.dumps), JSON_TEXT | ANY_TEXT))
    call_id = draw(mostly(st.sampled_from(["call_1", "call_2", "call_3"]), st.sampled_from(["", "x" * 250]) | ANY_TEXT))
    return ProposedCall(call_id=call_id, name=name, raw_arguments=raw)


CALL_LISTS = mostly(
    st.lists(proposed_calls(), max_size=3, unique_by=lambda call: call.call_id),
    st.lists(proposed_calls(), max_size=3),
)


def htmx(on: bool) -> dict:
    return {"HX-Request": "true"} if on else {}
