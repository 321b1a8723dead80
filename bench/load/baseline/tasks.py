"""The release task: the listing's path row locked, 10 Laplace values drawn, the release written,
the purchase marked released and the waiting request told through Redis."""

from __future__ import annotations

import os

import numpy as np
from django.db import transaction

from .celery_app import app
from .models import Holding, PathRow, Purchase, Release
from .waits import notify

_rng: dict[int, np.random.Generator] = {}


def rng() -> np.random.Generator:
    """This process's generator (numpy ``default_rng`` from the OS's entropy), made after the fork."""
    pid = os.getpid()
    if pid not in _rng:
        _rng.clear()
        _rng[pid] = np.random.default_rng()
    return _rng[pid]


@app.task(name="baseline.release")
def release(purchase_id: int) -> None:
    with transaction.atomic():
        purchase = Purchase.objects.get(pk=purchase_id)
        path = PathRow.objects.select_for_update().get(listing_id=purchase.listing_id)
        if purchase.status == "released":  # a task delivered twice
            return
        step = float(purchase.level_to - purchase.level_from)
        values = rng().laplace(0.0, 1.0 / step, size=10).tolist()
        Release.objects.create(purchase=purchase, values=values)
        purchase.status = "released"
        purchase.save(update_fields=["status"])
        Holding.objects.filter(buyer_id=purchase.buyer_id, listing_id=purchase.listing_id,
                               released__lt=purchase.level_to).update(released=purchase.level_to)
        path.draws += 1
        path.save(update_fields=["draws"])
        transaction.on_commit(lambda: notify(purchase_id))
