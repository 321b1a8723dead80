"""The catalog's invariants, enforced by the database for every writer (services,
ORM ``update()``, the admin, raw SQL), on PostgreSQL and SQLite (installed by
``catalog/migrations/0030_triggers.py``; see ``market.core.triggers``).

* A listing's ceiling never drops below a level already sold.
* A listing's insert or update keeps the sum of its dataset's counted listing
  totals (``ceiling + size_level``; ``market.catalog.budget.counted_sql``: point
  listings aside) within the dataset's budget. On a dataset with a delta
  (``delta_budget``), whose listings compose by privacy-loss distributions
  (``market.catalog.composition``: a figure SQL cannot compute, checked by the
  services under the same lock), each counted listing's total is still at most
  the budget: the part of that rule the database can state.
* A dataset's budget never drops below that sum (with a delta: below any listing's total).
* Budget-change rows (``DatasetBudgetChange``) cannot be changed (nor, on PostgreSQL, deleted).

Concurrency (PostgreSQL, READ COMMITTED): the listing trigger locks the dataset
row ``FOR UPDATE`` before it sums, so two listings written at once on one dataset
take turns (each statement of a PL/pgSQL function takes a fresh snapshot); a
budget update holds that row lock by updating the row. The services take the same
lock first (``catalog.locks.dataset_lock``). It is taken only when the counted sum
can grow (insert; higher total, other dataset, or counted where it was not), so closing or lowering a
listing never waits on its dataset.

SQLite serialises writers by itself. It stores these NUMERIC values as binary
floats, so its sums are compared with half a level quantum (0.00005) of slack:
0.1 + 0.2 must fit a budget of 0.3.
"""

from market.catalog.budget import counted_sql
from market.core.triggers import Triggers, append_only

SLACK = "0.00005"  # SQLite only: half a level quantum, for float sums


def _total(row: str = "") -> str:
    return f"({row}ceiling + {row}size_level)"


def _postgres_guards(delta) -> str:
    return f"""
    CREATE OR REPLACE FUNCTION listing_ceiling_guard() RETURNS trigger AS $$
    DECLARE sold numeric; others numeric; budget numeric; delta numeric;
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            SELECT COALESCE(MAX(purchased), 0) INTO sold FROM trading_holding WHERE listing_id = NEW.id;
            IF NEW.ceiling < sold THEN
                RAISE EXCEPTION 'ceiling % is below level % already sold', NEW.ceiling, sold
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        IF {counted_sql("NEW.")} AND (
            TG_OP = 'INSERT' OR {_total("NEW.")} > {_total("OLD.")}
            OR NEW.dataset_id <> OLD.dataset_id OR NEW.counted_in_budget <> OLD.counted_in_budget
        ) THEN
            -- the dataset's row lock: writers of its listings and of its budget take turns
            SELECT total_budget, {delta("")} INTO budget, delta FROM catalog_dataset WHERE id = NEW.dataset_id FOR UPDATE;
            IF delta IS NULL THEN
                SELECT COALESCE(SUM({_total()}), 0) INTO others FROM catalog_listing
                    WHERE dataset_id = NEW.dataset_id AND id <> NEW.id AND {counted_sql()};
            ELSE
                others := 0;  -- composed by privacy-loss distributions: each listing within the budget
            END IF;
            IF others + {_total("NEW.")} > budget THEN
                RAISE EXCEPTION 'listing totals % exceed the dataset budget %', others + {_total("NEW.")}, budget
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER catalog_listing_ceiling_guard BEFORE INSERT OR UPDATE ON catalog_listing
        FOR EACH ROW EXECUTE FUNCTION listing_ceiling_guard();
    CREATE OR REPLACE FUNCTION dataset_budget_floor() RETURNS trigger AS $$
    DECLARE need numeric;
    BEGIN
        IF NEW.total_budget < OLD.total_budget OR ({delta("NEW.")} IS NULL AND {delta("OLD.")} IS NOT NULL) THEN
            IF {delta("NEW.")} IS NULL THEN
                SELECT COALESCE(SUM({_total()}), 0) INTO need FROM catalog_listing
                    WHERE dataset_id = NEW.id AND {counted_sql()};
            ELSE
                SELECT COALESCE(MAX({_total()}), 0) INTO need FROM catalog_listing
                    WHERE dataset_id = NEW.id AND {counted_sql()};
            END IF;
            IF NEW.total_budget < need THEN
                RAISE EXCEPTION 'budget % is below the listings'' totals %', NEW.total_budget, need
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER catalog_dataset_budget_floor BEFORE UPDATE ON catalog_dataset
        FOR EACH ROW EXECUTE FUNCTION dataset_budget_floor();
"""


_POSTGRES_APPEND_ONLY, _SQLITE_APPEND_ONLY = append_only("catalog_append_only", ["catalog_datasetbudgetchange"])

_TOTALS = f"(SELECT COALESCE(SUM({_total()}), 0) FROM catalog_listing WHERE dataset_id = NEW.dataset_id AND "
_BUDGET = "(SELECT total_budget FROM catalog_dataset WHERE id = NEW.dataset_id)"


def _triggers(delta) -> Triggers:
    """The catalog's triggers; ``delta(row)`` is the SQL of a dataset row's delta (``"NULL"`` in the
    version from before datasets had one: every dataset then sums its listings)."""
    summed = f"(SELECT {delta('')} IS NULL FROM catalog_dataset WHERE id = NEW.dataset_id)"
    return Triggers(
        postgres=[_postgres_guards(delta), _POSTGRES_APPEND_ONLY],
        sqlite=[
            """CREATE TRIGGER catalog_listing_ceiling_sold BEFORE UPDATE ON catalog_listing
                WHEN NEW.ceiling < (SELECT COALESCE(MAX(purchased), 0) FROM trading_holding WHERE listing_id = NEW.id)
                BEGIN SELECT RAISE(ABORT, 'ceiling is below a level already sold'); END""",
            f"""CREATE TRIGGER catalog_listing_budget_ins BEFORE INSERT ON catalog_listing
                WHEN {counted_sql("NEW.")} AND {_total("NEW.")} + {summed} * {_TOTALS}{counted_sql()}) > {_BUDGET} + {SLACK}
                BEGIN SELECT RAISE(ABORT, 'listing totals exceed the dataset budget'); END""",
            f"""CREATE TRIGGER catalog_listing_budget_upd BEFORE UPDATE ON catalog_listing
                WHEN {counted_sql("NEW.")} AND {_total("NEW.")} + {summed} * {_TOTALS}{counted_sql()} AND id <> NEW.id)
                    > {_BUDGET} + {SLACK}
                BEGIN SELECT RAISE(ABORT, 'listing totals exceed the dataset budget'); END""",
            f"""CREATE TRIGGER catalog_dataset_budget_floor BEFORE UPDATE ON catalog_dataset
                WHEN NEW.total_budget + {SLACK} < (SELECT CASE WHEN {delta("NEW.")} IS NULL
                    THEN COALESCE(SUM({_total()}), 0) ELSE COALESCE(MAX({_total()}), 0) END FROM catalog_listing
                    WHERE dataset_id = NEW.id AND {counted_sql()})
                BEGIN SELECT RAISE(ABORT, 'the dataset budget is below its listings'' totals'); END""",
            *_SQLITE_APPEND_ONLY,
        ],
        retired=["append_only"],
    )


#: As catalog/migrations/0030_triggers.py installed them: before datasets had a delta.
TRIGGERS_BEFORE_DELTA = _triggers(lambda row: "NULL")
#: As they stand (catalog/migrations/0033_triggers_delta.py).
TRIGGERS = _triggers(lambda row: f"{row}delta_budget")
