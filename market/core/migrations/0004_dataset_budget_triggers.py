"""The dataset budget, enforced by the database for every writer (services,
ORM ``update()``, the admin, raw SQL), on PostgreSQL and SQLite.

* A listing's insert or update keeps the sum of its dataset's counted
  ceilings (``market.catalog.budget.counted_sql``: point listings aside)
  within the budget (on PostgreSQL this replaces 0001's ``listing_ceiling_guard``,
  which counted every listing and allowed no budget).
* A dataset's budget never drops below that sum.
* Budget-change rows (``catalog.DatasetBudgetChange``) cannot be changed
  (nor, on PostgreSQL, deleted).

Concurrency (PostgreSQL, READ COMMITTED): the listing trigger locks the
dataset row ``FOR UPDATE`` before it sums the ceilings, so two listings
written at once on one dataset take turns and the second sums after the first
committed (each statement of a PL/pgSQL function takes a fresh snapshot); a
budget update holds that row lock by updating the row. The services take the
same lock first (``catalog.locks.dataset_lock``), so there the trigger's lock
is already theirs. It is taken only when the counted sum can grow (insert;
higher ceiling, other dataset or kinds), so closing or lowering a listing
never waits on its dataset.

SQLite serialises writers by itself. It stores these NUMERIC values as binary
floats, so its sums are compared with half a level quantum (0.00005) of
slack: 0.1 + 0.2 must fit a budget of 0.3. SQLite drops a table's triggers
when Django rebuilds it: ``market.core.migration_helpers.reinstall_sqlite_triggers``
reinstalls these too, once this migration is applied.

Reversible: the triggers go and 0001's guard comes back.
"""

import re

from django.db import migrations

from market.catalog.budget import counted_sql

SLACK = "0.00005"  # SQLite only: half a level quantum, for float sums

POSTGRES = [
    f"""
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
            TG_OP = 'INSERT' OR NEW.ceiling > OLD.ceiling OR NEW.dataset_id <> OLD.dataset_id OR NEW.kinds <> OLD.kinds
        ) THEN
            -- the dataset's row lock: writers of its listings and of its budget take turns
            SELECT total_budget INTO budget FROM catalog_dataset WHERE id = NEW.dataset_id FOR UPDATE;
            SELECT COALESCE(SUM(ceiling), 0) INTO others FROM catalog_listing
                WHERE dataset_id = NEW.dataset_id AND id <> NEW.id AND {counted_sql()};
            IF others + NEW.ceiling > budget THEN
                RAISE EXCEPTION 'ceilings % exceed the dataset budget %', others + NEW.ceiling, budget
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    """,
    f"""
    CREATE FUNCTION dataset_budget_floor() RETURNS trigger AS $$
    DECLARE need numeric;
    BEGIN
        IF NEW.total_budget < OLD.total_budget THEN
            SELECT COALESCE(SUM(ceiling), 0) INTO need FROM catalog_listing WHERE dataset_id = NEW.id AND {counted_sql()};
            IF NEW.total_budget < need THEN
                RAISE EXCEPTION 'budget % is below the listings'' ceilings %', NEW.total_budget, need
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER catalog_dataset_budget_floor BEFORE UPDATE ON catalog_dataset
        FOR EACH ROW EXECUTE FUNCTION dataset_budget_floor();
    CREATE TRIGGER catalog_datasetbudgetchange_append_only BEFORE UPDATE OR DELETE ON catalog_datasetbudgetchange
        FOR EACH ROW EXECUTE FUNCTION append_only();
    """,
]

# 0001's guard, as it was (the reverse)
POSTGRES_REVERSE = [
    """
    DROP TRIGGER catalog_datasetbudgetchange_append_only ON catalog_datasetbudgetchange;
    DROP TRIGGER catalog_dataset_budget_floor ON catalog_dataset;
    DROP FUNCTION dataset_budget_floor();
    CREATE OR REPLACE FUNCTION listing_ceiling_guard() RETURNS trigger AS $$
    DECLARE sold numeric; others numeric; budget numeric;
    BEGIN
        SELECT COALESCE(MAX(purchased), 0) INTO sold FROM trading_holding WHERE listing_id = NEW.id;
        IF NEW.ceiling < sold THEN
            RAISE EXCEPTION 'ceiling % is below level % already sold', NEW.ceiling, sold
                USING ERRCODE = 'check_violation';
        END IF;
        SELECT total_budget INTO budget FROM catalog_dataset WHERE id = NEW.dataset_id;
        SELECT COALESCE(SUM(ceiling), 0) INTO others FROM catalog_listing
            WHERE dataset_id = NEW.dataset_id AND id <> NEW.id;
        IF budget IS NOT NULL AND others + NEW.ceiling > budget THEN
            RAISE EXCEPTION 'ceilings % exceed the dataset budget %', others + NEW.ceiling, budget
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    """
]

_OTHERS = f"(SELECT COALESCE(SUM(ceiling), 0) FROM catalog_listing WHERE dataset_id = NEW.dataset_id AND {counted_sql()}"
_BUDGET = "(SELECT total_budget FROM catalog_dataset WHERE id = NEW.dataset_id)"

SQLITE = [
    f"""CREATE TRIGGER catalog_listing_budget_ins BEFORE INSERT ON catalog_listing
        WHEN {counted_sql("NEW.")} AND NEW.ceiling + {_OTHERS}) > {_BUDGET} + {SLACK}
        BEGIN SELECT RAISE(ABORT, 'listing ceilings exceed the dataset budget'); END""",
    f"""CREATE TRIGGER catalog_listing_budget_upd BEFORE UPDATE ON catalog_listing
        WHEN {counted_sql("NEW.")} AND NEW.ceiling + {_OTHERS} AND id <> NEW.id) > {_BUDGET} + {SLACK}
        BEGIN SELECT RAISE(ABORT, 'listing ceilings exceed the dataset budget'); END""",
    f"""CREATE TRIGGER catalog_dataset_budget_floor BEFORE UPDATE ON catalog_dataset
        WHEN NEW.total_budget + {SLACK} <
            (SELECT COALESCE(SUM(ceiling), 0) FROM catalog_listing WHERE dataset_id = NEW.id AND {counted_sql()})
        BEGIN SELECT RAISE(ABORT, 'the dataset budget is below its listings'' ceilings'); END""",
    """CREATE TRIGGER catalog_datasetbudgetchange_append_only BEFORE UPDATE ON catalog_datasetbudgetchange
        BEGIN SELECT RAISE(ABORT, 'catalog_datasetbudgetchange rows are append-only (UPDATE refused)'); END""",
]


def trigger_names(sql_list) -> set[str]:
    return set(re.findall(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+)", " ".join(sql_list)))


def install(apps, schema_editor):
    """This migration's triggers (SQLite: dropped first if there, so it also reinstalls them)."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for sql in POSTGRES:
                cursor.execute(sql)
        elif connection.vendor == "sqlite":
            for sql in SQLITE:
                (name,) = trigger_names([sql])
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                cursor.execute(sql)


def uninstall(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for sql in POSTGRES_REVERSE:
                cursor.execute(sql)
        elif connection.vendor == "sqlite":
            for name in sorted(trigger_names(SQLITE)):
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")



class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_reinstall_sqlite_triggers_after_public_ids"),
        ("catalog", "0007_neighbouring_relation"),
        ("trading", "0001_initial"),
    ]
    operations = [migrations.RunPython(install, uninstall)]
