"""The dataset budget's triggers sum each listing's total: ``ceiling + size_level``.

``catalog.0017`` gave listings a size release (``size_level``, eps_p, carved out of the owner's
ceiling and charged to the dataset once): a listing's total is the highest level it sells plus
that. ``core.0004``'s triggers summed ceilings; these sum totals, so the database refuses, as the
services do, a listing or budget change that would let a dataset's listings cost more than its
budget. PostgreSQL: ``listing_ceiling_guard`` and ``dataset_budget_floor`` replaced. SQLite: the
same three triggers as ``core.0004`` (same names), summing totals, with its half-quantum slack;
``market.core.migration_helpers`` reinstalls them whenever a later migration rebuilds a table.

Reversible: ``core.0004``'s functions and triggers come back.
"""

import importlib

from django.db import migrations

from market.catalog.budget import counted_sql


def _guard(total: str) -> str:
    return f"""
    CREATE OR REPLACE FUNCTION listing_ceiling_guard() RETURNS trigger AS $$
    DECLARE sold numeric; others numeric; budget numeric;
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            SELECT COALESCE(MAX(purchased), 0) INTO sold FROM trading_holding WHERE listing_id = NEW.id;
            IF NEW.ceiling < sold THEN
                RAISE EXCEPTION 'ceiling % is below level % already sold', NEW.ceiling, sold
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        IF {counted_sql("NEW.")} AND (
            TG_OP = 'INSERT' OR {total.format(row="NEW.")} > {total.format(row="OLD.")}
            OR NEW.dataset_id <> OLD.dataset_id OR NEW.kinds <> OLD.kinds
        ) THEN
            -- the dataset's row lock: writers of its listings and of its budget take turns
            SELECT total_budget INTO budget FROM catalog_dataset WHERE id = NEW.dataset_id FOR UPDATE;
            SELECT COALESCE(SUM({total.format(row="")}), 0) INTO others FROM catalog_listing
                WHERE dataset_id = NEW.dataset_id AND id <> NEW.id AND {counted_sql()};
            IF others + {total.format(row="NEW.")} > budget THEN
                RAISE EXCEPTION 'listing totals % exceed the dataset budget %', others + {total.format(row="NEW.")}, budget
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE OR REPLACE FUNCTION dataset_budget_floor() RETURNS trigger AS $$
    DECLARE need numeric;
    BEGIN
        IF NEW.total_budget < OLD.total_budget THEN
            SELECT COALESCE(SUM({total.format(row="")}), 0) INTO need FROM catalog_listing
                WHERE dataset_id = NEW.id AND {counted_sql()};
            IF NEW.total_budget < need THEN
                RAISE EXCEPTION 'budget % is below the listings'' totals %', NEW.total_budget, need
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    """


WITH_SIZE = _guard("({row}ceiling + {row}size_level)")
CEILINGS_ONLY = _guard("{row}ceiling")


SLACK = "0.00005"  # SQLite only, as in core.0004: half a level quantum, for float sums
_TOTALS = "(SELECT COALESCE(SUM(ceiling + size_level), 0) FROM catalog_listing WHERE dataset_id = NEW.dataset_id AND "
_BUDGET = "(SELECT total_budget FROM catalog_dataset WHERE id = NEW.dataset_id)"

SQLITE_WITH_SIZE = [
    ("catalog_listing_budget_ins", f"""CREATE TRIGGER catalog_listing_budget_ins BEFORE INSERT ON catalog_listing
        WHEN {counted_sql("NEW.")} AND (NEW.ceiling + NEW.size_level) + {_TOTALS}{counted_sql()}) > {_BUDGET} + {SLACK}
        BEGIN SELECT RAISE(ABORT, 'listing totals exceed the dataset budget'); END"""),
    ("catalog_listing_budget_upd", f"""CREATE TRIGGER catalog_listing_budget_upd BEFORE UPDATE ON catalog_listing
        WHEN {counted_sql("NEW.")} AND (NEW.ceiling + NEW.size_level) + {_TOTALS}{counted_sql()} AND id <> NEW.id)
            > {_BUDGET} + {SLACK}
        BEGIN SELECT RAISE(ABORT, 'listing totals exceed the dataset budget'); END"""),
    ("catalog_dataset_budget_floor", f"""CREATE TRIGGER catalog_dataset_budget_floor BEFORE UPDATE ON catalog_dataset
        WHEN NEW.total_budget + {SLACK} < (SELECT COALESCE(SUM(ceiling + size_level), 0) FROM catalog_listing
            WHERE dataset_id = NEW.id AND {counted_sql()})
        BEGIN SELECT RAISE(ABORT, 'the dataset budget is below its listings'' totals'); END"""),
]


def sqlite_uninstall(apps, schema_editor):
    """SQLite: ``core.0004``'s budget triggers back (ceilings only). PostgreSQL: nothing."""
    if schema_editor.connection.vendor == "sqlite":
        importlib.import_module("market.core.migrations.0004_dataset_budget_triggers").install(apps, schema_editor)


def sqlite_install(apps, schema_editor):
    """SQLite: the budget triggers summing each listing's total (ceiling + size_level), in place of
    ``core.0004``'s (dropped first, so this also reinstalls them). PostgreSQL: nothing."""
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for name, sql in SQLITE_WITH_SIZE:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(sql)


def _run(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0004_dataset_budget_triggers"),
        ("catalog", "0017_listing_size_release"),
    ]
    operations = [
        migrations.RunPython(_run(WITH_SIZE), _run(CEILINGS_ONLY)),
        migrations.RunPython(sqlite_install, sqlite_uninstall),
    ]
