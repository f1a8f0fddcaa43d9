"""percentile_cont in the ORM: PostgreSQL's own, and the same aggregate registered on each SQLite connection."""

from math import ceil, floor

from django.db.models import Aggregate


class Percentile(Aggregate):
    """percentile_cont: the value below which `fraction` of the rows fall, interpolated."""

    function = "PERCENTILE_CONT"
    name = "Percentile"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)%(filter)s"

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=repr(float(fraction)), **extra)

    def as_sqlite(self, compiler, connection, **extra_context):
        template = "%(function)s(%(expressions)s, %(fraction)s)%(filter)s"
        return self.as_sql(compiler, connection, function="REVIEWHUB_PERCENTILE", template=template, **extra_context)


class _SqlitePercentile:
    """PostgreSQL's percentile_cont, for SQLite (registered on each new connection)."""

    def __init__(self):
        self.values, self.fraction = [], 0.5

    def step(self, value, fraction):
        if value is not None:
            self.values.append(value)
            self.fraction = fraction

    def finalize(self):
        if not self.values:
            return None
        values = sorted(self.values)
        position = self.fraction * (len(values) - 1)
        low, high = values[floor(position)], values[ceil(position)]
        return low + (high - low) * (position - floor(position))


def add_sqlite_functions(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        connection.connection.create_aggregate("REVIEWHUB_PERCENTILE", 2, _SqlitePercentile)
