"""The baseline's invariants after a run, counted in its database (every count must be 0), and
what its buyers were told against what is stored (as the product's, ``bench.load.invariants``)."""

from __future__ import annotations

from decimal import Decimal

from ..invariants import check_accounted, checker

CHECKS = [
    ("every purchase's transfer balances",
     "SELECT count(*) FROM (SELECT p.id FROM baseline_purchase p LEFT JOIN baseline_ledgerrow l "
     "ON l.purchase_id = p.id GROUP BY p.id, p.price HAVING count(l.id) <> 2 OR coalesce(sum(l.amount), 0) <> 0 "
     "OR min(l.amount) <> -p.price) x",
     "purchases without two ledger rows: the price out of the buyer's account, into the listing's"),
    ("no wallet negative", "SELECT count(*) FROM baseline_wallet WHERE balance < 0", "wallets below zero"),
    ("every wallet is its funds less its purchases",
     "SELECT count(*) FROM baseline_wallet w LEFT JOIN (SELECT buyer_id, sum(price) s FROM baseline_purchase "
     "GROUP BY buyer_id) p ON p.buyer_id = w.buyer_id WHERE w.balance <> w.initial - coalesce(p.s, 0)",
     "wallets whose balance is not the initial funds less the prices paid"),
    ("holdings: released <= purchased <= ceiling, matching the purchases and releases",
     "SELECT count(*) FROM baseline_holding h LEFT JOIN (SELECT buyer_id, listing_id, max(level_to) bought, "
     "max(CASE WHEN status = 'released' THEN level_to END) rel FROM baseline_purchase GROUP BY buyer_id, listing_id) p "
     "ON p.buyer_id = h.buyer_id AND p.listing_id = h.listing_id WHERE NOT (h.released <= h.purchased AND "
     "h.purchased <= h.ceiling) OR h.purchased <> coalesce(p.bought, 0) OR h.released <> coalesce(p.rel, 0)",
     "holdings out of order or not what their purchases and releases say"),
    ("each purchase steps up from the level before it",
     "SELECT count(*) FROM (SELECT level_from, lag(level_to, 1, CAST(0 AS NUMERIC)) OVER (PARTITION BY buyer_id, listing_id "
     "ORDER BY level_to) prev FROM baseline_purchase) x WHERE level_from <> prev",
     "purchases whose level_from is not the level held before them"),
    ("every released purchase has exactly one release, and no other purchase has one",
     "SELECT count(*) FROM baseline_purchase p LEFT JOIN baseline_release r ON r.purchase_id = p.id "
     "WHERE (p.status = 'released') <> (r.id IS NOT NULL)",
     "released purchases without a release, or releases of unreleased purchases"),
    ("nothing left in flight", "SELECT count(*) FROM baseline_purchase WHERE status <> 'released'",
     "purchases still queued after the drain"),
]


#: PostgreSQL only (the bench's database)
PG_CHECKS = [
    ("every release has 10 values", "SELECT count(*) FROM baseline_release WHERE jsonb_array_length(\"values\") <> 10",
     "releases without their 10 noisy values"),
]


def check_invariants(conn, logs: list, seed: dict) -> dict:
    out: dict[str, dict] = {}
    check = checker(out)
    for name, sql, detail in CHECKS + PG_CHECKS:
        check(name, conn.execute(sql).fetchone()[0], detail)
    told = {str(p[0]): p for log in logs for p in log.purchases}
    canary = seed["canary"]["id"]
    stored = {str(pid): (level_to, price, status) for pid, level_to, price, status in conn.execute(
        "SELECT id, level_to, price, status FROM baseline_purchase WHERE buyer_id <> %s", (canary,))}
    check_accounted(check, "every accepted purchase is stored, and nothing else", told, stored, "accepted")
    wrong = sum(1 for pid, p in told.items() if pid in stored and (
        Decimal(p[3]) != stored[pid][1] or Decimal(p[4]) != stored[pid][1] or Decimal(p[2]) != stored[pid][0]))
    check("each purchase was charged its quoted price", wrong, "purchases whose quote, answer and stored price differ")
    said = {str(r[3]) for log in logs for r in log.releases if r[2] == "released"}
    check("every purchase a buyer saw released is released",
          sum(1 for pid in said if stored.get(pid, (None, None, None))[2] != "released"),
          "purchases seen released by a buyer but not released in the database")
    return out
