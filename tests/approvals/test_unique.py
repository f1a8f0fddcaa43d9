"""one_or_none(): one row by a unique key, or None, with no ORDER BY to build (approvals/lib/unique.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.lib.unique import one_or_none

pytestmark = pytest.mark.django_db


def test_it_reads_the_one_row_without_ordering_it(reviewer, django_user_model):
    with CaptureQueriesContext(connection) as queries:
        found = one_or_none(django_user_model.objects.filter(username="alice"))

    assert found == reviewer
    assert len(queries) == 1 and "ORDER BY" not in queries[0]["sql"]  # first() would order by the key


def test_it_is_none_when_there_is_no_such_row(django_user_model):
    assert one_or_none(django_user_model.objects.filter(username="nobody")) is None
