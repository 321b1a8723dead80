"""The baseline's purchase, in one transaction: a guarded wallet debit, the holding checked and
raised, two ledger rows and a purchase row; the release task queued by id once it commits."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.db import IntegrityError, transaction
from django.db.models import F

from .models import Holding, LedgerRow, Listing, Purchase, Wallet

CENT = Decimal("0.01")


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def money(c: Decimal, eps: Decimal) -> Decimal:
    return (c * eps).quantize(CENT, rounding=ROUND_HALF_UP) if eps > 0 else Decimal("0.00")


def step_price(listing: Listing, level_from: Decimal, level_to: Decimal) -> Decimal:
    """P(to) - P(from) on the listing's linear curve, each rounded to the cent (as the product's)."""
    return money(listing.price_c, level_to) - money(listing.price_c, level_from)


def quote(buyer, listing_id: int, level: Decimal) -> dict:
    listing = Listing.objects.filter(pk=listing_id).first()
    if listing is None:
        raise Refused(404, "no such listing")
    held = Holding.objects.filter(buyer=buyer, listing=listing).values_list("purchased", flat=True).first()
    held = held if held is not None else Decimal(0)
    if not held < level <= listing.ceiling:
        raise Refused(409, f"level must be above {held} and at most {listing.ceiling}")
    return {"listing": listing.pk, "epsilon": str(level), "price": str(step_price(listing, held, level))}


def purchase(buyer, listing_id: int, level: Decimal, key: str | None) -> tuple[Purchase, bool]:
    """The purchase row (and whether it is new: an Idempotency-Key seen before gives the first one)."""
    from .tasks import release

    if key:
        seen = Purchase.objects.filter(idempotency_key=key, buyer=buyer).first()
        if seen is not None:
            return seen, False
    try:
        with transaction.atomic():
            listing = Listing.objects.filter(pk=listing_id).first()
            if listing is None:
                raise Refused(404, "no such listing")
            holding, _ = Holding.objects.select_for_update().get_or_create(
                buyer=buyer, listing=listing, defaults={"ceiling": listing.ceiling})
            if not holding.purchased < level <= holding.ceiling:
                raise Refused(409, f"level must be above {holding.purchased} and at most {holding.ceiling}")
            price = step_price(listing, holding.purchased, level)
            if not Wallet.objects.filter(buyer=buyer, balance__gte=price).update(balance=F("balance") - price):
                raise Refused(402, "not enough credits")
            made = Purchase.objects.create(buyer=buyer, listing=listing, idempotency_key=key,
                                           level_from=holding.purchased, level_to=level, price=price)
            holding.purchased = level
            holding.save(update_fields=["purchased"])
            LedgerRow.objects.bulk_create([
                LedgerRow(purchase=made, account=f"buyer:{buyer.pk}", amount=-price),
                LedgerRow(purchase=made, account=f"listing:{listing.pk}", amount=price),
            ])
            transaction.on_commit(lambda: release.delay(made.pk))
    except IntegrityError:  # the same Idempotency-Key at the same time
        seen = Purchase.objects.filter(idempotency_key=key, buyer=buyer).first()
        if seen is None:
            raise
        return seen, False
    return made, True
