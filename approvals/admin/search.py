"""What an auditor types into a search box: a run or call id, a run's UUID, or what the tools declare.

Each tool says what its calls can be found by (`Tool.search_fields`: an order
number, an address, a customer's name). Each function returns a Q for one model,
built so that every branch can use an index on PostgreSQL: ids by primary key,
a term a search field's pattern recognises by containment (`@>`) on the call's
arguments or facts (GIN indexes, migration 0005); only a term no pattern
recognises falls back to a scan of the fields declared without one (names).
"""

import re
import uuid

from django.db import connection
from django.db.models import Q, Subquery

from approvals import audit
from approvals.models import Run, ToolCall
from approvals.tools import registry

ID = re.compile(r"^[0-9]{1,18}$")  # ASCII digits only, and few enough for a bigint


def number(term: str) -> int | None:
    """The term as a row id, or None: "²" and "٣" are digits to str.isdigit() but no id, nor are 5,000 nines."""
    return int(term) if ID.match(term) else None


def _has(field: str, key: str, value: str) -> Q:
    """field's JSON has key = value: `@>` where the database has it (a GIN index serves it), else the key's value."""
    if connection.features.supports_json_field_contains:
        return Q(**{f"{field}__contains": {key: value}})
    return Q(**{f"{field}__{key}": value})


def calls(term: str) -> Q:
    """Calls about this term: by id, run id, run UUID, or a value some tool declares searchable."""
    term = term.strip()
    if not term:
        return Q()
    if (pk := number(term)) is not None:
        return Q(pk=pk) | Q(run_id=pk)
    try:
        return Q(run__public_id=uuid.UUID(term))
    except ValueError:
        pass
    return declared(term)


def help_text(ids: str) -> str:
    """What a search box finds: `ids` ("A call or run id"), then what the tools declare."""
    labels = list(dict.fromkeys(f.label for f in registry.searchables() if f.label))
    return ", ".join([ids, *labels]) + "."


def declared(term: str) -> Q:
    """The tools' search fields: exact values where a pattern recognises the term, else parts of names."""
    fields = registry.searchables()
    recognised = [f for f in fields if f.matches(term)]
    found = Q(pk__in=[])
    for field in recognised:
        for value in field.values(term):
            found |= _has(field.source, field.key, value)
    if not recognised:
        for field in (f for f in fields if not f.pattern):
            found |= Q(**{f"{field.source}__{field.key}__icontains": term})
    return found


def runs(term: str) -> Q:
    term = term.strip()
    if not term:
        return Q()
    if (pk := number(term)) is not None:
        return Q(pk=pk)
    try:
        return Q(public_id=uuid.UUID(term))
    except ValueError:
        pass
    return Q(pk__in=ToolCall.objects.filter(calls(term)).values("run_id"))


def events(term: str) -> Q:
    """For audit events: a call's id, a run's id or UUID (the run's events found as audit.of_run finds them), or a
    term the calls' search recognises."""
    term = term.strip()
    if not term:
        return Q()
    if (pk := number(term)) is not None:
        return Q(tool_call_id=pk) | audit.of_run(pk)
    try:
        public_id = uuid.UUID(term)
    except ValueError:
        return Q(tool_call__in=ToolCall.objects.filter(calls(term)).values("pk"))
    return audit.of_run(Subquery(Run.objects.filter(public_id=public_id).values("pk")[:1]))


def by_call(term: str, *, call_field: str = "tool_call", run_field: str = "run") -> Q:
    """For records that point at a call (and a run): decisions, audit events."""
    term = term.strip()
    if not term:
        return Q()
    if (pk := number(term)) is not None:
        q = Q(**{f"{call_field}_id": pk})
        if run_field:
            q |= Q(**{f"{run_field}_id": pk})
        return q
    if run_field:
        try:
            return Q(**{f"{run_field}__public_id": uuid.UUID(term)})
        except ValueError:
            pass
    return Q(**{f"{call_field}__in": ToolCall.objects.filter(calls(term)).values("pk")})
