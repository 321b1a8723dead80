"""The ledger's and the releases' invariants, each one SQL count of the rows that break it.

Used by the load benchmark after a run and by the concurrency tests after a
storm of purchases: every count must be 0. PostgreSQL SQL; run them with
:func:`violations` on any DB-API cursor.
"""

from __future__ import annotations

#: (name, SQL counting the violating rows, what a violation is)
INVARIANTS: list[tuple[str, str, str]] = [
    (
        'no purchase left in flight',
        "SELECT count(*) FROM trading_purchase WHERE status IN ('queued', 'computing')",
        'purchases still queued or computing after the drain',
    ),
    (
        'every transfer balances',
        'SELECT count(*) FROM (SELECT t.id FROM ledger_transfer t LEFT JOIN ledger_leg l ON l.transfer_id = t.id GROUP BY t.id HAVING count(l.id) < 2 OR coalesce(sum(l.amount), 0) <> 0) x',
        'transfers with fewer than two legs or legs not summing to zero',
    ),
    (
        'no wallet negative',
        'SELECT count(*) FROM ledger_account WHERE user_id IS NOT NULL AND balance < 0',
        'user accounts below zero',
    ),
    (
        'every balance is the sum of its legs',
        'SELECT count(*) FROM ledger_account a LEFT JOIN (SELECT account_id, sum(amount) s FROM ledger_leg GROUP BY account_id) l ON l.account_id = a.id WHERE a.balance <> coalesce(l.s, 0)',
        'accounts whose balance differs from the sum of their legs',
    ),
    (
        'the ledger sums to zero',
        'SELECT CASE WHEN coalesce(sum(balance), 0) <> 0 THEN 1 ELSE 0 END FROM ledger_account',
        'all balances together (the funding account is the negative of what entered)',
    ),
    (
        "every paid purchase has its one transfer, buyer's wallet to owner's earnings",
        "SELECT count(*) FROM trading_purchase p JOIN catalog_listing cl ON cl.id = p.listing_id JOIN catalog_dataset d ON d.id = cl.dataset_id WHERE p.price > 0 AND 1 <> ( SELECT count(*) FROM ledger_transfer t JOIN ledger_leg lw ON lw.transfer_id = t.id AND lw.amount = -p.price JOIN ledger_account aw ON aw.id = lw.account_id AND aw.kind = 'wallet' AND aw.user_id = p.buyer_id JOIN ledger_leg le ON le.transfer_id = t.id AND le.amount = p.price JOIN ledger_account ae ON ae.id = le.account_id AND ae.kind = 'earnings' AND ae.user_id = d.owner_id AND (ae.listing_id IS NULL OR ae.listing_id = p.listing_id) WHERE t.purchase_id = p.id AND t.kind = 'purchase' AND (SELECT count(*) FROM ledger_leg x WHERE x.transfer_id = t.id) = 2)",
        'purchases with a price but not exactly one matching two-leg purchase transfer',
    ),
    (
        'every wallet = its top-ups - its purchases + its refunds',
        "SELECT count(*) FROM ledger_account a WHERE a.kind = 'wallet' AND a.balance <> ( coalesce((SELECT sum(l.amount) FROM ledger_leg l JOIN ledger_transfer t ON t.id = l.transfer_id WHERE l.account_id = a.id AND t.kind = 'top_up'), 0) - coalesce((SELECT sum(p.price) FROM trading_purchase p WHERE p.buyer_id = a.user_id AND p.status <> 'failed'), 0))",
        "wallets that do not match the buyer's funding and non-failed purchases",
    ),
    (
        "every owner's earnings = the prices of the purchases of their listings",
        "SELECT count(*) FROM (SELECT a.user_id, sum(a.balance) AS balance FROM ledger_account a WHERE a.kind = 'earnings' GROUP BY a.user_id) e WHERE e.balance <> coalesce(( SELECT sum(p.price) FROM trading_purchase p JOIN catalog_listing cl ON cl.id = p.listing_id JOIN catalog_dataset d ON d.id = cl.dataset_id WHERE d.owner_id = e.user_id AND p.status <> 'failed'), 0) - coalesce(( SELECT sum(po.amount) FROM ledger_payout po WHERE po.user_id = e.user_id), 0)",
        "owners whose earnings (their accounts' sum: one per listing, and an older one per owner) do not match the sales less the payouts",
    ),
    (
        "every payout is one payout transfer, its amount from its owner's earnings to the payouts account",
        "SELECT count(*) FROM ledger_payout po JOIN ledger_transfer t ON t.id = po.transfer_id WHERE t.kind <> 'payout' OR po.amount <> coalesce((SELECT sum(l.amount) FROM ledger_leg l JOIN ledger_account a ON a.id = l.account_id WHERE l.transfer_id = t.id AND a.kind = 'payouts' AND a.user_id IS NULL), 0) OR -po.amount <> coalesce((SELECT sum(l.amount) FROM ledger_leg l JOIN ledger_account a ON a.id = l.account_id WHERE l.transfer_id = t.id AND a.kind = 'earnings' AND a.user_id = po.user_id), 0)",
        "payouts whose transfer does not move exactly their amount from their owner's earnings to the payouts account",
    ),
    (
        'no payout transfer without its payout',
        "SELECT count(*) FROM ledger_transfer t WHERE t.kind = 'payout' AND NOT EXISTS (SELECT 1 FROM ledger_payout po WHERE po.transfer_id = t.id)",
        'payout transfers that no payout request records',
    ),
    (
        "each buyer's steps on a listing chain (from = previous to)",
        "SELECT count(*) FROM (SELECT level_from, lag(level_to) OVER (PARTITION BY buyer_id, listing_id ORDER BY created_at) AS prev FROM trading_purchase WHERE status <> 'failed') x WHERE coalesce(prev, 0) <> level_from",
        'a step that does not start where the previous one ended (a lost update)',
    ),
    (
        '0 <= released <= purchased <= ceiling for every holding',
        'SELECT count(*) FROM trading_holding h JOIN catalog_listing cl ON cl.id = h.listing_id WHERE NOT (0 <= h.released AND h.released <= h.purchased AND h.purchased <= cl.ceiling)',
        'holdings out of order',
    ),
    (
        "every holding's purchased level = its last purchase, released = its highest release",
        "SELECT count(*) FROM trading_holding h WHERE h.purchased <> coalesce((SELECT max(p.level_to) FROM trading_purchase p WHERE p.buyer_id = h.buyer_id AND p.listing_id = h.listing_id AND p.status <> 'failed'), 0) OR h.released <> coalesce((SELECT max(r.level) FROM releases_release r WHERE r.buyer_id = h.buyer_id AND r.listing_id = h.listing_id), 0)",
        'holdings that disagree with the purchases and releases',
    ),
    (
        'each (path, level) has exactly one noise point',
        'SELECT count(*) - count(DISTINCT (path_id, level)) FROM releases_noisepoint',
        'duplicate noise points (a level sampled twice)',
    ),
    (
        "each listing's noise points = its distinct released levels (bit-report paths: sampled from the top down)",
        "SELECT count(*) FROM releases_noisepath np WHERE np.mechanism <> 'bits' AND (SELECT count(*) FROM releases_noisepoint pt WHERE pt.path_id = np.id) <> (SELECT count(DISTINCT r.level) FROM releases_release r WHERE r.listing_id = np.listing_id)",
        'paths whose points are not one per distinct released level',
    ),
    (
        "a bit-report path's points run from its ceiling down, each released one with its report",
        "SELECT count(*) FROM releases_noisepath np JOIN catalog_listing cl ON cl.id = np.listing_id WHERE np.mechanism = 'bits' AND (EXISTS (SELECT 1 FROM releases_noisepoint pt WHERE pt.path_id = np.id) AND NOT EXISTS (SELECT 1 FROM releases_noisepoint pt WHERE pt.path_id = np.id AND pt.level = cl.ceiling) OR EXISTS (SELECT 1 FROM releases_release r JOIN releases_noisepoint pt ON pt.id = r.point_id WHERE r.listing_id = np.listing_id AND NOT EXISTS (SELECT 1 FROM releases_bitreport b WHERE b.point_id = pt.id)))",
        'bit-report paths without their top point, or with a release that has no report',
    ),
    (
        'every release reads the point of its own path at its own level',
        'SELECT count(*) FROM releases_release r JOIN releases_noisepoint pt ON pt.id = r.point_id JOIN releases_noisepath np ON np.id = pt.path_id WHERE pt.level <> r.level OR np.listing_id <> r.listing_id',
        "releases pointing at another level or another listing's path",
    ),
    (
        'every released purchase has exactly one release, of its level and buyer',
        "SELECT count(*) FROM trading_purchase p WHERE p.status = 'released' AND 1 <> ( SELECT count(*) FROM releases_release r WHERE r.purchase_id = p.id AND r.level = p.level_to AND r.buyer_id = p.buyer_id AND r.listing_id = p.listing_id)",
        'released purchases without exactly one matching release',
    ),
    (
        'no release without a released purchase',
        "SELECT count(*) FROM releases_release r JOIN trading_purchase p ON p.id = r.purchase_id WHERE p.status <> 'released'",
        'releases of purchases not marked released',
    ),
    (
        "each path's released maximum = its highest release, within the ceiling",
        'SELECT count(*) FROM releases_noisepath np JOIN catalog_listing cl ON cl.id = np.listing_id WHERE np.released_max <> coalesce((SELECT max(r.level) FROM releases_release r WHERE r.listing_id = np.listing_id), 0) OR np.released_max > cl.ceiling',
        'paths whose privacy spent is not their highest released level',
    ),
]


def violations(cursor) -> dict[str, int]:
    """``{name: number of violating rows}`` for every invariant (all 0 when the data is sound)."""
    found = {}
    for name, sql, _ in INVARIANTS:
        cursor.execute(sql)
        found[name] = int(cursor.fetchone()[0])
    return found
