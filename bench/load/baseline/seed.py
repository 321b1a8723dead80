"""The baseline's database made ready: its tables (``migrate --run-syncdb``), ``--budgets``
budget rows with room for any run, and ``--buyers`` buyers with tokens, written as JSON.

    python -m bench.load.baseline.seed --buyers 50 --budgets 5 --out FILE    (DATABASE_URL set)
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

BUDGET = Decimal("1000000000")  # no run spends it


def seed(*, buyers: int, budgets: int) -> dict:
    from django.core.management import call_command

    from .models import Budget, Buyer

    call_command("migrate", run_syncdb=True, verbosity=0)
    rows = Budget.objects.bulk_create(Budget(initial=BUDGET, remaining=BUDGET) for _ in range(budgets))
    people = Buyer.objects.bulk_create(
        Buyer(name=f"baseline-buyer-{i}", token=secrets.token_urlsafe(32)) for i in range(buyers)
    )
    return {"budgets": [b.pk for b in rows], "buyers": [{"id": p.pk, "token": p.token} for p in people]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=50)
    parser.add_argument("--budgets", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.write_text(json.dumps(seed(buyers=args.buyers, budgets=args.budgets)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
