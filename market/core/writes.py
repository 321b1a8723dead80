"""Inserts of one row whose SQL is written once per process, so that another write can go with them
in the same statement.

``Model.objects.create`` compiles its INSERT on every call: about 0.36 ms of the web process's CPU
against 0.10 ms for the statement itself, and each statement is one more round trip to PostgreSQL,
parsed and planned there. A purchase makes four writes (the purchase, its holding raised, the
transfer and its legs); :class:`RowInsert` lets each pair go as one statement (a data-modifying
``WITH``). The values are those Django's own insert writes: every concrete field's ``pre_save``
(defaults were applied when the object was made; ``auto_now`` and ``auto_now_add`` are set here),
then its database value (``get_db_prep_save``). A model with a database default is refused (its
value would not be known without reading it back).

Only on PostgreSQL: on the embedded SQLite default (or with ``RowInsert.enabled`` False), callers
save through the ORM (:meth:`RowInsert.usable`). ``tests/marketplace/test_row_writes.py`` compares the
rows written both ways.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db import connection


class RowInsert:
    """``RowInsert(Purchase)``: ``.sql`` is ``INSERT INTO table (columns) VALUES (%s, ...)``, without
    the automatic primary key (``RETURNING`` it when the model has one: ``.returning``);
    ``.params(obj)`` its parameters; ``.saved(obj, pk)`` marks the object saved, as ``save`` does."""

    #: False: :meth:`usable` says no (callers save through the ORM), for tests to compare the two
    enabled = True

    @classmethod
    def usable(cls) -> bool:
        return cls.enabled and connection.vendor == "postgresql"

    def __init__(self, model):
        meta = model._meta
        if any(f.has_db_default() for f in meta.concrete_fields):
            raise ImproperlyConfigured(f"{meta.label} has a database default: RowInsert cannot know its value")
        self.model = model
        self.auto = meta.auto_field
        self.fields = [f for f in meta.local_concrete_fields if f is not self.auto]
        self._sql = None

    @property
    def sql(self) -> str:
        if self._sql is None:
            quote, meta = connection.ops.quote_name, self.model._meta
            columns = ", ".join(quote(f.column) for f in self.fields)
            self._sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(self.fields))})"
        return self._sql

    @property
    def returning(self) -> str:
        """``RETURNING`` the automatic primary key (the model must have one)."""
        return f" RETURNING {connection.ops.quote_name(self.auto.column)}"

    def params(self, obj) -> list:
        return [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in self.fields]

    def saved(self, obj, pk=None):
        if pk is not None:
            setattr(obj, self.auto.attname, pk)
        obj._state.adding, obj._state.db = False, connection.alias
        return obj


def prep(model, name: str, value):
    """``value`` as the database takes it for ``model``'s field ``name``."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)
