"""Demo data: an owner, a buyer, staff, two listings over a generated clinic dataset, and credits.

Idempotent: running it again changes nothing that exists.
"""

from decimal import Decimal

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from market.catalog.models import Dataset
from market.catalog.services import dataset_create, listing_create
from market.ledger.models import Transfer
from market.ledger.payments import provider

DEMO_USERS = {
    # username: (password, owner, buyer, staff)
    "demo-owner": ("demo-owner-pass", True, False, False),
    "demo-buyer": ("demo-buyer-pass", False, True, False),
    "demo-admin": ("demo-admin-pass", False, False, True),
}
DATASET = "City clinic visits, 2025"


def clinic_csv(rows: int = 2000) -> bytes:
    """A plausible table: age, systolic blood pressure, visits per year, household income."""
    rng = np.random.default_rng()  # demo data: fresh each time, no secret
    age = np.clip(rng.normal(46, 18, rows), 0, 99).round()
    pressure = np.clip(95 + 0.55 * age + rng.normal(0, 14, rows), 80, 220).round()
    visits = rng.poisson(1.5 + age / 25)
    income = np.clip(rng.lognormal(10.6, 0.55, rows), 5_000, 400_000).round(-2)
    lines = ["age,systolic_bp,visits,income"]
    lines += [f"{int(a)},{int(p)},{int(v)},{int(i)}" for a, p, v, i in zip(age, pressure, visits, income)]
    return ("\n".join(lines) + "\n").encode()


class Command(BaseCommand):
    help = "Create demo users, a dataset, listings and credits (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        users = {}
        for name, (password, is_owner, is_buyer, is_staff) in DEMO_USERS.items():
            user, created = User.objects.get_or_create(
                username=name,
                defaults={"is_owner": is_owner, "is_buyer": is_buyer, "is_staff": is_staff, "is_superuser": is_staff},
            )
            if created:
                user.set_password(password)
                user.save()
            users[name] = user
        owner, buyer = users["demo-owner"], users["demo-buyer"]
        if not Dataset.objects.filter(owner=owner, name=DATASET).exists():
            dataset = dataset_create(
                owner=owner,
                name=DATASET,
                description="2,000 patients of a city clinic: age, blood pressure, visits and income.",
                data=clinic_csv(),
                total_budget="10",
            )
            listing_create(
                owner=owner,
                dataset_id=dataset.public_id,
                title="Clinic patients: how many, how old, how often they visit",
                description="Patient count, mean age, total visits and an age histogram.",
                statistics=[
                    {"kind": "count"},
                    {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
                    {"kind": "sum", "column": "visits", "lower": 0, "upper": 20},
                    {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 45, 65, 80, 100]},
                ],
                ceiling="5",
                price_per_epsilon="20.00",
                compensation={"E": "40", "rate": "1", "E_min": "0", "people": 2000},
            )
            listing_create(
                owner=owner,
                dataset_id=dataset.public_id,
                title="Clinic patients: household income and blood pressure",
                description="Mean household income and mean systolic blood pressure.",
                statistics=[
                    {"kind": "mean", "column": "income", "lower": 0, "upper": 200000},
                    {"kind": "mean", "column": "systolic_bp", "lower": 80, "upper": 220},
                ],
                ceiling="2",
                price_curve={"kind": "compensation", "margin": "0.1"},
                compensation={"E": "2", "rate": "1", "E_min": "0", "people": 2000},
            )
        if not Transfer.objects.filter(reference="demo-seed-credits").exists():
            provider().fund(user=buyer, amount=Decimal("500.00"), reference="demo-seed-credits", memo="demo credits")
        self.stdout.write(self.style.SUCCESS("Demo ready: demo-owner / demo-owner-pass, demo-buyer / demo-buyer-pass, demo-admin / demo-admin-pass"))
