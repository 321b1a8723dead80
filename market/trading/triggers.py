"""The trading invariant, enforced by the database whatever code writes to it
(installed by ``trading/migrations/0030_triggers.py``; see ``market.core.triggers``):
a holding's purchased level never exceeds its listing's ceiling.
"""

from market.core.triggers import Triggers, within_ceiling_postgres

_ABOVE = "NEW.purchased > (SELECT ceiling FROM catalog_listing WHERE id = NEW.listing_id)"

TRIGGERS = Triggers(
    postgres=[within_ceiling_postgres("trading_within_ceiling", "trading_holding", "purchased")],
    sqlite=[
        f"""CREATE TRIGGER trading_holding_within_ceiling_{suffix} BEFORE {op} ON trading_holding
            WHEN {_ABOVE}
            BEGIN SELECT RAISE(ABORT, 'purchased level is above the listing ceiling'); END"""
        for suffix, op in (("ins", "INSERT"), ("upd", "UPDATE"))
    ],
    retired=["within_ceiling"],
)
