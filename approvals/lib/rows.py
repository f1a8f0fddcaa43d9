"""Model instances from the rows of hand-written SQL, built as the ORM builds them: each column through its
field's database converters, then Model.from_db.

For the one read on a hot path whose query the ORM takes longer to build than the database takes to run
(services/runnable.py); everywhere else the ORM reads.
"""

from functools import lru_cache


class Columns:
    """One model's concrete columns in a SELECT under a table alias, and the instance built from them."""

    def __init__(self, model, alias: str):
        self.model, self.alias = model, alias
        self.fields = list(model._meta.concrete_fields)
        self.names = [field.attname for field in self.fields]
        self.width = len(self.fields)

    def select(self, quote) -> str:
        """The columns, for a SELECT list; `quote`: the database's quote_name."""
        return ", ".join(f"{quote(self.alias)}.{quote(field.column)}" for field in self.fields)

    def build(self, row, start: int, connection):
        """The instance from row[start:start + width], as if read from the database by the ORM."""
        values = list(row[start : start + self.width])
        for i, expression, converters in _converters(self, connection):
            for convert in converters:
                values[i] = convert(values[i], expression, connection)
        return self.model.from_db(connection.alias, self.names, values)


@lru_cache(maxsize=64)  # per (columns, connection): each thread has its own connection
def _converters(columns: Columns, connection) -> list[tuple[int, object, list]]:
    found = []
    for i, field in enumerate(columns.fields):
        expression = field.get_col(columns.alias)
        converters = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
        if converters:
            found.append((i, expression, converters))
    return found
