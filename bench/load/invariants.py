"""The product's invariants after a run, each counted in the database (every count must be 0):
the ledger's and the releases' own (``market.core.invariants``), then prices against the
listings' curves and what the buyers were told against what is stored."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from market.core.invariants import INVARIANTS

CENT = Decimal("0.01")


def checker(out: dict):
    """``check(name, violations, detail)`` writing ``{name: {ok, violations, detail}}`` into ``out``."""

    def check(name: str, bad: int, detail: str) -> None:
        out[name] = {"ok": bad == 0, "violations": int(bad), "detail": detail}

    return check


def check_accounted(check, name: str, told, stored, answered: str) -> None:
    """Every id a buyer was answered with is stored, and no other id is."""
    missing = sum(1 for key in told if key not in stored)
    extra = sum(1 for key in stored if key not in told)
    check(name, missing + extra, f"{missing} {answered} but not stored, {extra} stored but never {answered}")


def _money(c: Decimal, eps: Decimal) -> Decimal:
    return (c * eps).quantize(CENT, rounding=ROUND_HALF_UP) if eps > 0 else Decimal("0.00")


def check_invariants(conn, logs: list, seed: dict) -> dict:
    """Every ledger and release invariant, counted in the database. ``{name: {ok, violations, detail}}``."""
    one = lambda q, *p: conn.execute(q, p or None).fetchone()[0]  # noqa: E731
    out: dict[str, dict] = {}
    check = checker(out)
    for name, sql, detail in INVARIANTS:
        check(name, one(sql), detail)
    check("no purchase failed", one("SELECT count(*) FROM trading_purchase WHERE status = 'failed'"),
          "failed (refunded) purchases: none expected under load")
    # prices: each step costs P(to) - P(from) on the listing's linear curve
    bad_price = 0
    curves = {l["id"]: Decimal(l["price_curve"]["c"]) for l in seed["listings"]}
    for listing_id, level_from, level_to, price in conn.execute(
        "SELECT listing_id, level_from, level_to, price FROM trading_purchase"
    ):
        c = curves[listing_id]
        bad_price += price != _money(c, level_to) - _money(c, level_from)
    check("every price is P(to) - P(from)", bad_price, "purchases whose price is not the curve's increment")
    # what the buyers were told against what is stored
    told = {p[0]: p for log in logs for p in log.purchases}
    stored = {str(pid): (str(level_to), price, status) for pid, level_to, price, status in conn.execute(
        "SELECT p.id, p.level_to, p.price, p.status FROM trading_purchase p JOIN accounts_user u ON u.id = p.buyer_id "
        "WHERE u.username <> 'load-canary'")}
    check_accounted(check, "every accepted purchase is stored, and nothing else", told, stored, "accepted")
    wrong = sum(1 for pid, p in told.items() if pid in stored and (
        Decimal(p[3]) != stored[pid][1] or Decimal(p[4]) != stored[pid][1] or Decimal(p[2]) != Decimal(stored[pid][0])))
    check("each purchase was charged its quoted price", wrong, "purchases whose quote, answer and stored price differ")
    said_released = {r[3] for log in logs for r in log.releases if r[2] == "released"}
    check("every purchase a buyer saw released is released",
          sum(1 for pid in said_released if stored.get(pid, (None, None, None))[2] != "released"),
          "purchases seen released by a buyer but not released in the database")
    return out
