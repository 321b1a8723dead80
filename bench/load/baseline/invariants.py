"""The baseline's invariants after a run, counted in its database (every count must be 0)."""

from __future__ import annotations

from ..invariants import check_accounted, checker

CHECKS = [
    (
        "every debit balances",
        "SELECT count(*) FROM (SELECT r.id FROM baseline_release r LEFT JOIN baseline_ledgerrow l "
        "ON l.release_id = r.id GROUP BY r.id HAVING count(l.id) <> 2 OR coalesce(sum(l.amount), 0) <> 0) x",
        "releases without exactly two ledger rows summing to zero",
    ),
    (
        "no budget negative",
        "SELECT count(*) FROM baseline_budget WHERE remaining < 0",
        "budgets below zero",
    ),
    (
        "every budget is its initial amount less its debits",
        "SELECT count(*) FROM baseline_budget b LEFT JOIN (SELECT budget_id, sum(epsilon) s FROM baseline_release "
        "GROUP BY budget_id) r ON r.budget_id = b.id WHERE b.remaining <> b.initial - coalesce(r.s, 0)",
        "budgets whose remaining amount differs from the initial one less the releases' amounts",
    ),
    (
        "every debit is the buyer's leg of its release",
        "SELECT count(*) FROM baseline_ledgerrow l JOIN baseline_release r ON r.id = l.release_id "
        "WHERE l.account = 'buyer:' || r.buyer_id AND l.amount <> -r.epsilon",
        "buyer legs whose amount is not the release's amount",
    ),
]


def check_invariants(conn, logs: list) -> dict:
    out: dict[str, dict] = {}
    check = checker(out)
    for name, sql, detail in CHECKS:
        check(name, conn.execute(sql).fetchone()[0], detail)
    told = {p[0] for log in logs for p in log.purchases}
    stored = {row[0] for row in conn.execute("SELECT id FROM baseline_release")}
    check_accounted(check, "every answered request is stored, and nothing else", told, stored, "answered")
    return out
