"""Price curves. A purchase from level e1 to e2 costs P(e2) - P(e1), so buying
in steps costs exactly what buying at once costs (MATH.md section 9)."""

from decimal import ROUND_HALF_UP, Decimal

from market.core.fields import MONEY_QUANTUM


def price_at(listing, eps: Decimal) -> Decimal:
    """P(eps) = c * eps, rounded to the cent (rounding keeps P non-decreasing)."""
    if eps <= 0:
        return Decimal("0.00")
    return (listing.price_per_epsilon * eps).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def price_increment(listing, level_from: Decimal, level_to: Decimal) -> Decimal:
    return price_at(listing, level_to) - price_at(listing, level_from)
