"""Reads of one row (and the rows joined to it) whose SQL is written once per process.

Django compiles a queryset's SQL on every evaluation. For the reads every purchase makes (the
quote's listing and its dataset; the purchase read back with its release and the release's listing)
that compilation cost two to three times the statement itself (``bench/load/phases.py``).
:class:`Prepared` states such a read once, as SQL: which models' columns it selects (by alias), and
the ``FROM ... WHERE`` with ``%s`` parameters. It runs as that SQL, and each model's columns become a
model instance as Django's own reads make them: every value through the field's converters (a JSON
field's text is parsed), then ``Model.from_db``. A model whose primary key comes back NULL (a left
join that found nothing) is None.

Only on PostgreSQL; elsewhere (the embedded SQLite default) the caller's queryset runs instead
(``fallback``). ``tests/marketplace/test_prepared_reads.py`` compares the two on every kind of
listing, field for field.

Who may read what is still :mod:`market.core.visibility`'s to say: the SQL of a read in a selector
states the same filter as the queryset it replaces (the user's id among its parameters), and its
fallback is that queryset.
"""

from __future__ import annotations

from django.db import connection


class _Part:
    __slots__ = ("model", "alias", "fields", "names", "pk", "converters")

    def __init__(self, model, alias: str, exclude: tuple):
        self.model, self.alias = model, alias
        self.fields = [f for f in model._meta.concrete_fields if f.attname not in exclude and f.name not in exclude]
        self.names = [f.attname for f in self.fields]
        self.pk = self.names.index(model._meta.pk.attname)
        self.converters = None  # per field, found on first use (they are the database's)

    def columns(self) -> list[str]:
        return [f'{self.alias}."{f.column}"' for f in self.fields]

    def make(self, values):
        if self.converters is None:  # (index, column, converters) of each field that has any
            cols = [(i, f.get_col(self.alias)) for i, f in enumerate(self.fields)]
            self.converters = [
                (i, col, found) for i, col in cols
                if (found := connection.ops.get_db_converters(col) + col.get_db_converters(connection))
            ]
        if values[self.pk] is None:
            return None
        values = list(values)
        for i, col, converters in self.converters:
            for converter in converters:  # as Django's compiler applies them, NULLs included
                values[i] = converter(values[i], col, connection)
        return self.model.from_db(connection.alias, self.names, values)


class Prepared:
    """``Prepared(select=[(Purchase, "p", ()), (Release, "r", ())], sql='FROM ... WHERE p."id" = %s',
    fallback=lambda pk: ...)``; ``.one(params)``: a tuple of instances (None where a left join found
    nothing), or None when there is no row. ``exclude``: fields not read (left deferred). ``extra``:
    more selected expressions; their values come last in the tuple, as one tuple."""

    def __init__(self, *, select: list[tuple], sql: str, fallback, extra: list[str] = ()):
        self.parts = [_Part(model, alias, exclude) for model, alias, exclude in select]
        self.fallback = fallback
        self.extra = len(extra)
        columns = [c for part in self.parts for c in part.columns()] + list(extra)
        self.sql = "SELECT " + ", ".join(columns) + " " + sql

    def one(self, params):
        if connection.vendor != "postgresql":
            return self.fallback(*params)
        with connection.cursor() as cursor:
            cursor.execute(self.sql, list(params))
            row = cursor.fetchone()
        if row is None:
            return None
        out, start = [], 0
        for part in self.parts:
            out.append(part.make(row[start:start + len(part.names)]))
            start += len(part.names)
        if self.extra:  # the extra expressions' values, on the first instance, by the caller's names
            out.append(row[start:])
        return tuple(out)
