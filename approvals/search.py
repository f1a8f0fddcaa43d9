"""What an auditor types into a search box: a run or call id, a run's UUID, an order, a customer.

Each function returns a Q for one model, built so that every branch can use an
index on PostgreSQL: ids by primary key, orders and customers by containment
(`@>`) on the call's arguments and facts (GIN indexes, migration 0005), and only
a name fragment falls back to a scan of the calls' customer names.
"""

import re
import uuid

from django.db import connection
from django.db.models import Q

from .models import ToolCall

ORDER = re.compile(r"^[A-Za-z]-\d+$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
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
    """Calls about this term: by id, run id, run UUID, order number, customer email or name."""
    term = term.strip()
    if not term:
        return Q()
    if (pk := number(term)) is not None:
        return Q(pk=pk) | Q(run_id=pk)
    try:
        return Q(run__public_id=uuid.UUID(term))
    except ValueError:
        pass
    if ORDER.match(term):
        return _has("arguments", "order_id", term.upper())
    if EMAIL.match(term):
        return (
            _has("facts", "customer_email", term.lower())
            | _has("arguments", "to", term.lower())
            | _has("arguments", "to", term)
        )
    return Q(facts__customer__icontains=term)


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
