"""The baseline's one write: a guarded debit, two ledger rows and a release with a noise sample."""

from __future__ import annotations

import os
from decimal import Decimal

import numpy as np
from django.db import transaction

from .models import Budget, LedgerRow, Release

_rng: dict[int, np.random.Generator] = {}


def rng() -> np.random.Generator:
    """This process's generator (numpy ``default_rng``), made on first use after the fork."""
    pid = os.getpid()
    if pid not in _rng:
        _rng.clear()
        _rng[pid] = np.random.default_rng()
    return _rng[pid]


class OutOfBudget(Exception):
    pass


def budget_debit(*, buyer, budget_id: int, amount: Decimal) -> tuple[Release, Decimal]:
    """Lock the budget row, check and debit ``amount``, write two ledger rows and a release
    holding a Laplace sample of scale 1/amount, in one transaction. Returns the release and
    what is left of the budget; :class:`OutOfBudget` if it cannot pay (nothing written)."""
    with transaction.atomic():
        budget = Budget.objects.select_for_update().get(pk=budget_id)
        if budget.remaining < amount:
            raise OutOfBudget(f"budget {budget_id} has {budget.remaining} left, {amount} asked")
        budget.remaining -= amount
        budget.save(update_fields=["remaining"])
        release = Release.objects.create(
            budget=budget, buyer=buyer, epsilon=amount, value=float(rng().laplace(0.0, 1.0 / float(amount)))
        )
        LedgerRow.objects.bulk_create([
            LedgerRow(release=release, account=f"buyer:{buyer.pk}", amount=-amount),
            LedgerRow(release=release, account=f"budget:{budget_id}", amount=amount),
        ])
    return release, budget.remaining
