"""The ledger's invariants, enforced by the database whatever code writes to it
(installed by ``ledger/migrations/0030_triggers.py``; see ``market.core.triggers``).

* An account's balance moves only by inserting legs: a trigger adds each leg.
* Legs and transfers are append-only.
* PostgreSQL, at commit: every transfer has at least two legs summing to zero.

SQLite gets the same triggers except the deferred ones, which it cannot express,
and the DELETE guards, which would stop the test runner from emptying its tables.
(The payout guard is ``0004_payouts``'s.)
"""

from market.core.triggers import Triggers, append_only

APPEND_ONLY_POSTGRES, APPEND_ONLY_SQLITE = append_only("ledger_append_only", ["ledger_leg", "ledger_transfer"])

TRIGGERS = Triggers(
    postgres=[
        """
        CREATE OR REPLACE FUNCTION ledger_leg_apply() RETURNS trigger AS $$
        BEGIN
            UPDATE ledger_account SET balance = balance + NEW.amount WHERE id = NEW.account_id;
            RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER ledger_leg_apply AFTER INSERT ON ledger_leg
            FOR EACH ROW EXECUTE FUNCTION ledger_leg_apply();
        """,
        APPEND_ONLY_POSTGRES,
        """
        CREATE OR REPLACE FUNCTION ledger_transfer_balanced() RETURNS trigger AS $$
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
    ],
    sqlite=[
        """CREATE TRIGGER ledger_leg_apply AFTER INSERT ON ledger_leg BEGIN
            UPDATE ledger_account SET balance = balance + NEW.amount WHERE id = NEW.account_id; END""",
        *APPEND_ONLY_SQLITE,
    ],
    retired=["append_only"],
)
