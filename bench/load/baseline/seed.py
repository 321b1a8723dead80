"""The baseline's database made ready: its tables (``migrate --run-syncdb``), ``--listings``
listings (each with its path row) and ``--buyers`` buyers plus a canary, each with a token and
a funded wallet; written as JSON in the shape of the product's seed (``bench.load.seed``).

    python -m bench.load.baseline.seed --buyers 50 --listings 5 --ceiling 5 --price 2.00 --out FILE
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
from decimal import Decimal
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.load.baseline.settings")

import django  # noqa: E402

django.setup()

FUNDS = Decimal("100000000.00")  # no run spends it


def seed(*, buyers: int, listings: int, ceiling: str = "5", price: str = "2.00") -> dict:
    from django.core.management import call_command

    from .models import Buyer, Listing, PathRow, Wallet

    call_command("migrate", run_syncdb=True, verbosity=0)
    made = Listing.objects.bulk_create(Listing(price_c=Decimal(price), ceiling=Decimal(ceiling))
                                       for _ in range(listings))
    PathRow.objects.bulk_create(PathRow(listing=l) for l in made)
    people = Buyer.objects.bulk_create(
        Buyer(name=f"baseline-buyer-{i}" if i >= 0 else "baseline-canary", token=secrets.token_urlsafe(32))
        for i in range(-1, buyers))
    Wallet.objects.bulk_create(Wallet(buyer=p, initial=FUNDS, balance=FUNDS) for p in people)
    shown = [{"id": p.pk, "token": p.token} for p in people]
    return {"listings": [{"id": l.pk, "ceiling": str(l.ceiling), "price_curve": {"c": str(l.price_c)}} for l in made],
            "canary": shown[0], "buyers": shown[1:]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=50)
    parser.add_argument("--listings", type=int, default=5)
    parser.add_argument("--ceiling", default="5")
    parser.add_argument("--price", default="2.00")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.write_text(json.dumps(seed(buyers=args.buyers, listings=args.listings, ceiling=args.ceiling,
                                        price=args.price)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
