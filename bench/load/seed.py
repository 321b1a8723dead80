"""Seed step of ``bench.load`` (run as a subprocess on the load database).

    python -m bench.load.seed --buyers 50 --listings 5 --ceiling 5 --out FILE

Through the services, as the product does it: one owner, one dataset
(processed here, at once, rather than by a worker), ``--listings`` listings (counts, sums, means and histograms, linear price
``--price`` credits per epsilon), ``--buyers`` buyers plus one canary buyer,
the owner and each buyer with an API token and a wallet funded by
``market.ledger.payments.ManualFunding().fund``. Writes the listings and the
buyers' tokens as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
from decimal import Decimal
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402


def csv_bytes(rows: int = 2000) -> bytes:
    rng = np.random.default_rng()  # benchmark data: no secret, fresh each run
    age = rng.integers(0, 100, rows)
    visits = rng.poisson(2.0, rows)
    lines = ["age,visits"] + [f"{a},{v}" for a, v in zip(age, visits)]
    return ("\n".join(lines) + "\n").encode()


#: the listings cycle through these statistics (vectors of 11, 3, 1, 2 and 5 values)
SPECS = [
    ("count + 10-bin age histogram", [{"kind": "count"}, {"kind": "histogram", "column": "age", "bins": list(range(0, 101, 10))}]),
    ("count, mean age, total visits", [
        {"kind": "count"},
        {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
        {"kind": "sum", "column": "visits", "lower": 0, "upper": 20},
    ]),
    ("total visits of the over-50s", [
        {"kind": "sum", "column": "visits", "lower": 0, "upper": 20, "where": [{"column": "age", "op": ">=", "value": 50}]},
    ]),
    ("mean age, mean visits", [
        {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
        {"kind": "mean", "column": "visits", "lower": 0, "upper": 20},
    ]),
    ("5-bin visits histogram", [{"kind": "histogram", "column": "visits", "bins": [0, 1, 2, 3, 5, 20]}]),
]


def seed(*, buyers: int, listings: int, ceiling: str, price: str, funds: str) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from market.accounts.services import api_key_create
    from market.catalog.models import Dataset
    from market.catalog.services import dataset_create, dataset_process, listing_create
    from market.ledger.payments import ManualFunding

    User = get_user_model()
    owner = User.objects.create_user("load-owner", password=None, is_owner=True, is_buyer=False)
    owner_token = api_key_create(user=owner, name="load benchmark")[1]  # uploads through the API (tests/faults)
    budget = max(Decimal(100), listings * Decimal(ceiling))  # room for every listing's ceiling
    dataset = dataset_create(owner=owner, name="load", data=csv_bytes(), total_budget=str(budget))
    if dataset.status == Dataset.Status.PROCESSING:  # its task was sent to the broker, which nobody reads yet
        dataset = dataset_process(dataset_id=dataset.pk)
    made = []
    for i in range(listings):
        name, spec = SPECS[i % len(SPECS)]
        listing = listing_create(
            owner=owner, dataset_id=dataset.public_id, title=f"load {i}: {name}", statistics=spec,
            ceiling=ceiling, price_per_epsilon=price,
        )
        made.append({"id": listing.pk, "title": listing.title, "ceiling": str(listing.ceiling),
                     "price_curve": listing.price_curve, "dim": len(listing.labels)})
    funding = ManualFunding()
    people = []
    with transaction.atomic():
        users = User.objects.bulk_create(
            User(username=f"load-buyer-{i}" if i >= 0 else "load-canary", is_buyer=True) for i in range(-1, buyers)
        )
        tokens = [api_key_create(user=u, name="load benchmark")[1] for u in users]
    for user, token in zip(users, tokens):
        funding.fund(user=user, amount=Decimal(funds), reference=f"load-seed-{user.pk}", memo="load benchmark credits")
        people.append({"id": user.pk, "username": user.username, "token": token})
    return {"owner": owner.pk, "owner_token": owner_token, "dataset": dataset.public_id, "listings": made,
            "canary": people[0], "buyers": people[1:], "funds": funds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=50)
    parser.add_argument("--listings", type=int, default=5)
    parser.add_argument("--ceiling", default="5")
    parser.add_argument("--price", default="2.00", help="linear price c: credits per epsilon")
    parser.add_argument("--funds", default="10000.00", help="credits per buyer (ManualFunding caps a top-up at 100000)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    report = seed(buyers=args.buyers, listings=args.listings, ceiling=args.ceiling, price=args.price, funds=args.funds)
    args.out.write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
