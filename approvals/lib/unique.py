"""One row by a unique key, or None: what `.first()` is often used for, without its ORDER BY.

first() orders the queryset (by the model's Meta ordering, else by the key) so that "first" means something;
for a filter on a unique key there is one row at most, and compiling that ORDER BY is a third of building the
query: 0.4 ms of an agent's call read of 1.8 (bench/README.md, issue 26). On the API's paths each request
reads a few such rows, on two shared cores.
"""

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet


def one_or_none[R](queryset: QuerySet[Any, R]) -> R | None:
    """The one row of a queryset filtered on a unique key (or a unique condition), or None."""
    try:
        return queryset.get()
    except ObjectDoesNotExist:  # the model's DoesNotExist
        return None
