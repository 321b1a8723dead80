"""Database triggers as data, and the migration operation that installs them.

Each app that owns a table keeps the triggers guarding it in a module of its
own (``market/ledger/triggers.py``, ``market/catalog/triggers.py``,
``market/trading/triggers.py``, ``releases/triggers.py``) as a :class:`Triggers`
value, and installs it with :class:`InstallTriggers` in one of its migrations.

Installing drops each trigger first (``DROP ... IF EXISTS``), so it also applies
where an older migration installed the same trigger (the former ``core``
migrations did), and leaves exactly one copy. Reversing drops the triggers and
their functions. SQLite drops a table's triggers when Django rebuilds the table:
``market.core.migration_helpers.reinstall_sqlite_triggers`` reinstalls the
SQLite triggers of every applied :class:`InstallTriggers` operation, so a later
migration that rebuilds a table ends with that step (or with
``InstallTriggers`` of the app's triggers again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db import migrations

_TRIGGER = re.compile(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+)\s.*?\sON (\w+)", re.S)
_FUNCTION = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(")


def trigger_names(statements) -> list[str]:
    """The names of the triggers ``statements`` create, in order."""
    return [name for sql in statements for name, _ in _TRIGGER.findall(sql)]


@dataclass(frozen=True)
class Triggers:
    """One app's triggers.

    ``postgres``: statements creating functions (``CREATE OR REPLACE FUNCTION``) and
    triggers; ``sqlite``: one ``CREATE TRIGGER`` each. ``retired``: functions a
    former migration shared between apps (``append_only``, ``within_ceiling``),
    dropped on PostgreSQL once no trigger uses them any more.
    """

    postgres: list[str]
    sqlite: list[str]
    retired: list[str] = field(default_factory=list)

    def postgres_triggers(self) -> list[tuple[str, str]]:
        return [pair for sql in self.postgres for pair in _TRIGGER.findall(sql)]

    def postgres_functions(self) -> list[str]:
        return [name for sql in self.postgres for name in _FUNCTION.findall(sql)]

    def install(self, connection) -> None:
        """Every trigger dropped if there, then created (PostgreSQL and SQLite; other databases: nothing)."""
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                for name, table in self.postgres_triggers():
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                for sql in self.postgres:
                    cursor.execute(sql)  # no parameters: the '%' in RAISE messages stay as written
                for function in self.retired:  # dropped only once no trigger of any app uses it
                    cursor.execute(
                        "SELECT 1 FROM pg_proc p WHERE p.proname = %s AND p.pronargs = 0 "
                        "AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgfoid = p.oid)",
                        [function],
                    )
                    if cursor.fetchone():
                        cursor.execute(f"DROP FUNCTION {function}()")
            elif connection.vendor == "sqlite":
                self.install_sqlite(connection)

    def install_sqlite(self, connection) -> None:
        with connection.cursor() as cursor:
            for sql in self.sqlite:
                for name in trigger_names([sql]):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                cursor.execute(sql)

    def uninstall(self, connection) -> None:
        """Every trigger and function dropped (if there)."""
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                for name, table in self.postgres_triggers():
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                for function in dict.fromkeys(self.postgres_functions()):
                    cursor.execute(f"DROP FUNCTION IF EXISTS {function}()")
            elif connection.vendor == "sqlite":
                for name in trigger_names(self.sqlite):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")


def append_only(function: str, tables: list[str]) -> tuple[str, list[str]]:
    """Rows of ``tables`` never change: (PostgreSQL: ``function()`` and a trigger per table
    refusing UPDATE and DELETE; SQLite: a trigger per table refusing UPDATE; the DELETE
    guard would stop the test runner from emptying its tables)."""
    postgres = f"""
        CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
        BEGIN
            RAISE EXCEPTION '% rows are append-only (% refused)', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'integrity_constraint_violation';
        END $$ LANGUAGE plpgsql;
        """ + "".join(
        f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} FOR EACH ROW EXECUTE FUNCTION {function}();\n"
        for t in tables
    )
    sqlite = [
        f"""CREATE TRIGGER {t}_append_only BEFORE UPDATE ON {t} BEGIN
            SELECT RAISE(ABORT, '{t} rows are append-only (UPDATE refused)'); END"""
        for t in tables
    ]
    return postgres, sqlite


def within_ceiling_postgres(function: str, table: str, column: str) -> str:
    """PostgreSQL: ``table``'s ``column`` never above its listing's ceiling (``function()`` and
    the trigger ``<table>_within_ceiling``, on INSERT and UPDATE)."""
    return f"""
        CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
        DECLARE cap numeric;
        BEGIN
            SELECT ceiling INTO cap FROM catalog_listing WHERE id = NEW.listing_id;
            IF NEW.{column} > cap THEN
                RAISE EXCEPTION '{column} level % is above the listing ceiling %', NEW.{column}, cap
                    USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER {table}_within_ceiling BEFORE INSERT OR UPDATE ON {table}
            FOR EACH ROW EXECUTE FUNCTION {function}();
        """


class InstallTriggers(migrations.RunPython):
    """A migration operation: ``triggers`` installed (each dropped first if there); reversed: dropped.

    Use it in the app that owns the tables, in the migration that creates the
    triggers and in any later one that must put them back (after a SQLite table
    rebuild, say: or end that migration with
    ``migration_helpers.reinstall_sqlite_triggers``, which reinstalls those of
    every applied ``InstallTriggers``).
    """

    reduces_to_sql = False

    def __init__(self, triggers: Triggers):
        self.triggers = triggers
        super().__init__(self._install, self._uninstall)

    def _install(self, apps, schema_editor):
        self.triggers.install(schema_editor.connection)

    def _uninstall(self, apps, schema_editor):
        self.triggers.uninstall(schema_editor.connection)

    def describe(self):
        return "Install the database triggers"


class ReplaceTriggers(InstallTriggers):
    """A migration operation: an app's triggers as a later migration changes them. Forwards: ``triggers``
    installed over ``replaces`` (each trigger and function dropped first, then created); backwards:
    ``replaces`` installed again, as they stood. ``market.core.migration_helpers.applied_triggers``
    counts the newer set in place of the older once this is applied."""

    def __init__(self, triggers: Triggers, *, replaces: Triggers):
        self.replaces = replaces
        super().__init__(triggers)

    def _uninstall(self, apps, schema_editor):
        self.triggers.uninstall(schema_editor.connection)
        self.replaces.install(schema_editor.connection)

    def describe(self):
        return "Replace the database triggers"
