"""Steps shared by migrations that add a column to a guarded table.

Two things make such a migration delicate (see ``market.core.triggers``): the
append-only tables refuse UPDATE by trigger, so filling a new column for
existing rows must lift that trigger for the fill and only for it; and SQLite drops a table's triggers whenever Django rebuilds the table, so the
triggers are reinstalled after the change, whichever way it runs.
"""

from __future__ import annotations

import contextlib

from market.core import ids

BATCH = 1000


def applied_triggers(connection) -> list:
    """The :class:`~market.core.triggers.Triggers` of every applied ``InstallTriggers`` operation,
    in migration order (each app's own, from its trigger migration on: ``<app>/triggers.py``); a
    ``ReplaceTriggers`` puts its set in place of the one it replaces."""
    from django.db.migrations.loader import MigrationLoader

    from market.core.triggers import InstallTriggers

    loader = MigrationLoader(connection)
    found, seen = [], set()
    for leaf in loader.graph.leaf_nodes():
        for key in loader.graph.forwards_plan(leaf):
            if key in seen or key not in loader.applied_migrations:
                continue
            seen.add(key)
            for op in loader.graph.nodes[key].operations:
                if isinstance(op, InstallTriggers):
                    replaced = getattr(op, "replaces", None)  # a ReplaceTriggers: the newer set in the older's place
                    found = [t for t in found if t is not replaced] + [op.triggers]
    return found


def reinstall_sqlite_triggers(apps, schema_editor):
    """A RunPython step: on SQLite, the triggers of every app whose trigger migration is applied,
    dropped and created again (idempotent); an app whose trigger migration is still to come gets
    its triggers from that migration. PostgreSQL alters tables in place and keeps its triggers: nothing."""
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    for triggers in applied_triggers(connection):
        triggers.install_sqlite(connection)


#: the same step under its former name (older migrations call it, whichever way they run)
reinstall_sqlite_triggers_if_installed = reinstall_sqlite_triggers


def drop_sqlite_triggers_naming(*tables: str):
    """A RunPython step: SQLite refuses to rebuild a table while triggers of other tables name it
    (renaming the rebuilt table fails inside them), so every trigger whose text names one of
    ``tables`` is dropped first; a later step installs them again (PostgreSQL: nothing)."""

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            for table in tables:
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE %s", [f"%{table}%"])
                for (name,) in cursor.fetchall():
                    cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')

    return drop


#: the ledger's migrations rebuild ledger_account
drop_sqlite_triggers_naming_accounts = drop_sqlite_triggers_naming("ledger_account")


def _has_trigger(connection, table: str, trigger: str) -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass", [trigger, table])
        else:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = %s", [trigger])
        return cursor.fetchone() is not None


def fill_public_ids(app_label: str, model_name: str, new_id, *, append_only_trigger: str | None = None):
    """A RunPython step giving every row without a public id a fresh one from ``new_id()``.

    ``append_only_trigger`` names the trigger that refuses UPDATE on the table:
    on PostgreSQL it is disabled around the fill, in the same transaction (a
    failure rolls the disabling back too); on SQLite it is dropped, and the app's
    trigger migration (``<app>.0030_triggers``) installs it again.
    """

    def fill(apps, schema_editor):
        model = apps.get_model(app_label, model_name)
        connection = schema_editor.connection
        table = model._meta.db_table
        # on a new database the triggers come later (<app>.0030_triggers): nothing to lift, and no rows
        guarded = bool(append_only_trigger) and _has_trigger(connection, table, append_only_trigger)
        with connection.cursor() as cursor:
            if guarded and connection.vendor == "postgresql":
                cursor.execute(f"ALTER TABLE {connection.ops.quote_name(table)} DISABLE TRIGGER {append_only_trigger}")
            elif guarded and connection.vendor == "sqlite":
                cursor.execute(f"DROP TRIGGER {append_only_trigger}")  # <app>.0030_triggers installs it again
            pending = list(model.objects.filter(public_id__isnull=True).values_list("pk", flat=True))
            for start in range(0, len(pending), BATCH):
                rows = [model(pk=pk, public_id=new_id()) for pk in pending[start : start + BATCH]]
                model.objects.bulk_update(rows, ["public_id"])
            if guarded and connection.vendor == "postgresql":
                cursor.execute(f"ALTER TABLE {connection.ops.quote_name(table)} ENABLE TRIGGER {append_only_trigger}")

    return fill


def public_id_operations(app_label: str, model_name: str, new_id, *, append_only_trigger: str | None = None) -> list:
    """Add ``public_id`` to a model with rows: nullable, filled, then unique and required.

    Reversible: going back drops the column (and, on SQLite, reinstalls the
    triggers the table rebuild dropped). Forwards, SQLite's triggers are
    reinstalled by the app's trigger migration, which runs after these.
    """
    from django.db import migrations, models

    return [
        migrations.RunPython(migrations.RunPython.noop, reinstall_sqlite_triggers_if_installed),  # reverse: runs last
        migrations.AddField(
            model_name=model_name,
            name="public_id",
            field=models.CharField(max_length=ids.MAX_LENGTH, null=True, editable=False),
        ),
        migrations.RunPython(
            fill_public_ids(app_label, model_name, new_id, append_only_trigger=append_only_trigger),
            migrations.RunPython.noop,
        ),
        migrations.AlterField(
            model_name=model_name,
            name="public_id",
            field=models.CharField(
                max_length=ids.MAX_LENGTH,
                unique=True,
                editable=False,
                default=new_id,
                help_text=f"the opaque id URLs and answers use ({ids.PREFIXES[model_name]}...); the integer pk stays internal",
            ),
        ),
    ]


@contextlib.contextmanager
def append_only_lifted(connection, table: str):
    """Within the caller's transaction: ``table``'s append-only trigger lifted, then put back.

    For rewriting stored bytes whose meaning does not change (encrypting them, or
    re-encrypting them under a new key). PostgreSQL: the trigger is disabled and
    enabled again in the same transaction (``ALTER TABLE`` locks the table against
    writers until commit, so keep the transaction short); SQLite: dropped and
    created again. A failure inside rolls the lifting back with everything else.
    Nothing happens where the trigger is not installed (a new database).
    """
    from django.db import transaction

    trigger = f"{table}_append_only"
    if not connection.in_atomic_block:
        raise transaction.TransactionManagementError("append_only_lifted needs a transaction")
    if connection.vendor not in ("postgresql", "sqlite") or not _has_trigger(connection, table, trigger):
        yield
        return
    quoted = connection.ops.quote_name(table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # ALTER TABLE refuses a table with deferred checks still pending in this transaction
            # (foreign keys of rows inserted earlier in it): run them now; they are deferred again below
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {quoted} DISABLE TRIGGER {trigger}")
        else:  # created again below exactly as it was installed
            cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s", [trigger])
            (installed,) = cursor.fetchone()
            cursor.execute(f"DROP TRIGGER {trigger}")
    yield
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {quoted} ENABLE TRIGGER {trigger}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")  # every deferrable check here is INITIALLY DEFERRED
        else:
            cursor.execute(installed)
