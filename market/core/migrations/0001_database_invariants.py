"""Invariants the database enforces by itself, whatever code writes to it.

* Account balances move only by inserting legs (a trigger adds each leg).
* Ledger legs and transfers, noise points and releases are append-only.
* PostgreSQL, at commit: every transfer has at least two legs summing to zero.
* A holding's purchased level never exceeds its listing's ceiling; a ceiling
  never drops below a level already sold; a path's released maximum never
  exceeds the ceiling; a dataset's listings' ceilings stay within its budget.

SQLite (the embedded default for trying the product) gets the same triggers
except the deferred ones, which it cannot express, and the DELETE guards,
which would stop the test runner from emptying its tables.
"""

from django.db import migrations

APPEND_ONLY = ["ledger_leg", "ledger_transfer", "releases_noisepoint", "releases_release"]

POSTGRES = [
    """
    CREATE FUNCTION ledger_leg_apply() RETURNS trigger AS $$
    BEGIN
        UPDATE ledger_account SET balance = balance + NEW.amount WHERE id = NEW.account_id;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER ledger_leg_apply AFTER INSERT ON ledger_leg
        FOR EACH ROW EXECUTE FUNCTION ledger_leg_apply();
    """,
    """
    CREATE FUNCTION append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION '% rows are append-only (% refused)', TG_TABLE_NAME, TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END $$ LANGUAGE plpgsql;
    """
    + "".join(
        f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} "
        f"FOR EACH ROW EXECUTE FUNCTION append_only();\n"
        for t in APPEND_ONLY
    ),
    """
    CREATE FUNCTION ledger_transfer_balanced() RETURNS trigger AS $$
    DECLARE
        tid bigint;
        total numeric;
        legs integer;
    BEGIN
        IF TG_TABLE_NAME = 'ledger_leg' THEN tid := NEW.transfer_id; ELSE tid := NEW.id; END IF;
        SELECT COALESCE(SUM(amount), 0), COUNT(*) INTO total, legs FROM ledger_leg WHERE transfer_id = tid;
        IF legs < 2 OR total <> 0 THEN
            RAISE EXCEPTION 'transfer % does not balance: % legs summing to %', tid, legs, total
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql;
    CREATE CONSTRAINT TRIGGER ledger_leg_balanced AFTER INSERT ON ledger_leg
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transfer_balanced();
    CREATE CONSTRAINT TRIGGER ledger_transfer_balanced AFTER INSERT ON ledger_transfer
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transfer_balanced();
    """,
    """
    CREATE FUNCTION within_ceiling() RETURNS trigger AS $$
    -- TG_ARGV[0]: the level column of NEW that may not exceed its listing's ceiling
    DECLARE cap numeric; level numeric;
    BEGIN
        level := (to_jsonb(NEW) ->> TG_ARGV[0])::numeric;
        SELECT ceiling INTO cap FROM catalog_listing WHERE id = NEW.listing_id;
        IF level > cap THEN
            RAISE EXCEPTION '% level % is above the listing ceiling %', TG_ARGV[0], level, cap
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER trading_holding_within_ceiling BEFORE INSERT OR UPDATE ON trading_holding
        FOR EACH ROW EXECUTE FUNCTION within_ceiling('purchased');
    CREATE TRIGGER releases_noisepath_within_ceiling BEFORE INSERT OR UPDATE ON releases_noisepath
        FOR EACH ROW EXECUTE FUNCTION within_ceiling('released_max');
    """,
    """
    CREATE FUNCTION listing_ceiling_guard() RETURNS trigger AS $$
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
    CREATE TRIGGER catalog_listing_ceiling_guard BEFORE INSERT OR UPDATE ON catalog_listing
        FOR EACH ROW EXECUTE FUNCTION listing_ceiling_guard();
    """,
]

SQLITE = [
    """CREATE TRIGGER ledger_leg_apply AFTER INSERT ON ledger_leg BEGIN
        UPDATE ledger_account SET balance = balance + NEW.amount WHERE id = NEW.account_id; END""",
    *[
        f"""CREATE TRIGGER {t}_append_only BEFORE UPDATE ON {t} BEGIN
            SELECT RAISE(ABORT, '{t} rows are append-only (UPDATE refused)'); END"""
        for t in APPEND_ONLY
    ],
    """CREATE TRIGGER trading_holding_within_ceiling_ins BEFORE INSERT ON trading_holding
        WHEN NEW.purchased > (SELECT ceiling FROM catalog_listing WHERE id = NEW.listing_id)
        BEGIN SELECT RAISE(ABORT, 'purchased level is above the listing ceiling'); END""",
    """CREATE TRIGGER trading_holding_within_ceiling_upd BEFORE UPDATE ON trading_holding
        WHEN NEW.purchased > (SELECT ceiling FROM catalog_listing WHERE id = NEW.listing_id)
        BEGIN SELECT RAISE(ABORT, 'purchased level is above the listing ceiling'); END""",
    """CREATE TRIGGER releases_noisepath_within_ceiling BEFORE UPDATE ON releases_noisepath
        WHEN NEW.released_max > (SELECT ceiling FROM catalog_listing WHERE id = NEW.listing_id)
        BEGIN SELECT RAISE(ABORT, 'released level is above the listing ceiling'); END""",
    """CREATE TRIGGER catalog_listing_ceiling_sold BEFORE UPDATE ON catalog_listing
        WHEN NEW.ceiling < (SELECT COALESCE(MAX(purchased), 0) FROM trading_holding WHERE listing_id = NEW.id)
        BEGIN SELECT RAISE(ABORT, 'ceiling is below a level already sold'); END""",
]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"postgresql": POSTGRES, "sqlite": SQLITE}.get(vendor, [])
    with schema_editor.connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)  # no parameters: the '%' in RAISE messages stay as written


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0001_initial"),
        ("trading", "0001_initial"),
        ("catalog", "0001_initial"),
        ("releases", "0001_initial"),
    ]
    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
